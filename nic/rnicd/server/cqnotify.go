// How a CQ's mover tells the client that an armed CQ fired. A CQ made by
// CREATE_CQ has an eventfd of its own (it goes in the reply). A CQ made
// by CREATE_CQ_ON (proto/chanevents.go) on a completion channel sets its
// slot in the channel's event set and writes the channel's one
// eventfd, and a CQ without a channel has nothing to signal: neither
// costs a descriptor of its own.

package server

import (
	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/rnicd/proto"
)

// cqNotifier signals a fired arm; release frees what it holds when the
// CQ goes.
type cqNotifier interface {
	signal()
	release()
}

// notifyFD is a CQ's own eventfd (versions 1 to 5).
type notifyFD int

func (n notifyFD) signal()  { signal(int(n)) }
func (n notifyFD) release() { unix.Close(int(n)) }

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
