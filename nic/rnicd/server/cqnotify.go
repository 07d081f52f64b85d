// How a CQ's mover tells the client that an armed CQ fired. A CQ on a
// completion channel (proto/chanevents.go) sets its slot in the channel's
// event set and writes the channel's one eventfd, and a CQ without a
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
// set bit names the CQ, the channel's eventfd wakes the
// client. The set is written before the eventfd, so a client woken finds
// the slot (or took it on an earlier wake).
type channelSlot struct {
	ch     *chanObj
	events *proto.ChannelEvents
	fd     int // the channel's eventfd, owned by the channel
	slot   uint32
}

func (c channelSlot) signal() {
	if c.events.Fire(c.slot) {
		signal(c.fd)
	}
}

// release gives the slot back to the channel; the eventfd stays the
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
