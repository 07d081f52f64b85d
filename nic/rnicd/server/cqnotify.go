// How a CQ's mover tells the client that an armed CQ fired. A CQ on a
// completion channel (proto/chanevents.go) sets its slot in the channel's
// event set and sends a byte on the channel's one wake-up socket, and a CQ without a
// channel has nothing to signal: neither costs a descriptor of its own.

package server

import "github.com/rnic/rnic/nic/rnicd/proto"

// cqNotifier signals a fired arm; release frees what it holds when the
// CQ goes.
type cqNotifier interface {
	signal()
	release()
}

// channelSlot is a CQ's slot in a completion channel's event set: the
// set bit names the CQ, the channel's wake-up socket wakes the client.
// The set is written before the byte is sent, so a client woken finds the
// slot (or took it on an earlier wake). No fire is lost though a send may
// fail: the client drains its end before it takes the set, so a slot set
// after its take comes with a byte sent after its drain; a send that
// found the socket full leaves the client bytes to read all the same.
// The send never blocks (wakeUp), whatever the client does to its end.
type channelSlot struct {
	ch     *chanObj
	events *proto.ChannelEvents
	fd     int // the daemon's end of the channel's socket, owned by the channel
	slot   uint32
}

func (c channelSlot) signal() {
	if c.events.Fire(c.slot) {
		wakeUp(c.fd)
	}
}

// release gives the slot back to the channel; the socket stays the
// channel's.
func (c channelSlot) release() {
	if c.ch != nil {
		c.ch.put(c.slot)
	}
}

// noNotifier is a CQ without a completion channel: an arm
// fires nothing the client could wait on, as with a verbs CQ that has no
// channel.
type noNotifier struct{}

func (noNotifier) signal()  {}
func (noNotifier) release() {}
