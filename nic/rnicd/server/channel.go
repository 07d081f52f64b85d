// Completion channels: one wake-up socket (wakeup.go) and one event set
// per channel, shared by its CQs (proto/chanevents.go). A CQ on a channel
// holds a slot of the channel's set; the channel cannot be destroyed
// while it has CQs, as ibv_destroy_comp_channel refuses.

package server

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpCreateChannel, handleCreateChannel)
	Register(proto.OpDestroyChannel, handleDestroy[*chanObj](kindChannel))
	Register(proto.OpCreateCQOn, handleCreateCQOn)
}

type chanObj struct {
	s      *Session
	h      uint32
	mem    *ringMem
	events *proto.ChannelEvents
	fd     int // the daemon's end of the wake-up socket

	mu   sync.Mutex
	free []uint32 // slots given back, reused first
	next uint32   // slots below next were handed out
	cqs  int      // CQs on the channel
}

func (c *chanObj) kind() objKind  { return kindChannel }
func (c *chanObj) handle() uint32 { return c.h }

func (c *chanObj) destroy(s *Session, _ bool) error {
	c.mu.Lock()
	n := c.cqs
	c.mu.Unlock()
	if n > 0 {
		return fmt.Errorf("rnicd: destroy channel: %d CQs on it: %w", n, verbs.ErrBusy)
	}
	c.mem.free()
	unix.Close(c.fd)
	s.unreserve(kindChannel, 0)
	return nil
}

// slot hands a CQ a slot of the channel's set.
func (c *chanObj) slot() (channelSlot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var i uint32
	switch {
	case len(c.free) > 0:
		i, c.free = c.free[len(c.free)-1], c.free[:len(c.free)-1]
	case c.next < proto.MaxChannelCQs:
		i = c.next
		c.next++
	default:
		return channelSlot{}, fmt.Errorf("rnicd: %d CQs on one channel: %w", proto.MaxChannelCQs, verbs.ErrNoMemory)
	}
	c.cqs++
	return channelSlot{ch: c, events: c.events, fd: c.fd, slot: i}, nil
}

// put takes a slot back. A fire still set in the set for it reaches
// whichever CQ gets the slot next as a spurious event (harmless).
func (c *chanObj) put(i uint32) {
	c.mu.Lock()
	c.free = append(c.free, i)
	c.cqs--
	c.mu.Unlock()
}

func handleCreateChannel(s *Session, req *Request, rep *Reply) error {
	if err := s.reserve(kindChannel, 0); err != nil {
		return err
	}
	c := &chanObj{s: s, fd: -1}
	var pair wakePair
	err := func() error {
		var err error
		if c.mem, err = s.newRingMem(proto.ChannelAreaLen); err != nil {
			return err
		}
		if c.events, err = proto.NewChannelEvents(c.mem.mem); err != nil {
			return err
		}
		pair, err = newWakePair(true)
		c.fd = pair.own
		return err
	}()
	if err != nil {
		if c.mem != nil {
			c.mem.free()
		}
		s.unreserve(kindChannel, 0)
		return err
	}
	c.h = s.newHandle()
	s.insert(c)
	rep.Set(&proto.CreateChannelReply{Channel: c.h, Place: c.mem.place()}, append(c.mem.fds(), pair.sendPeer(rep))...)
	rep.After(c.mem.sent)
	return nil
}

func handleCreateCQOn(s *Session, req *Request, rep *Reply) error {
	var m proto.CreateCQOnReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	notify := func() (cqNotifier, error) { return noNotifier{}, nil }
	if m.Channel != 0 {
		ch, err := lookup[*chanObj](s, m.Channel, kindChannel)
		if err != nil {
			return err
		}
		notify = func() (cqNotifier, error) { return ch.slot() }
	}
	c, layout, err := newCQ(s, m.CQE, notify)
	if err != nil {
		return err
	}
	var slot uint32
	if cs, ok := c.notify.(channelSlot); ok {
		slot = cs.slot
	}
	r := &proto.CreateCQOnReply{CreateCQReply: proto.CreateCQReply{CQ: c.h, Ring: layout, Place: c.mem.place()}, Slot: slot}
	rep.Set(r, c.mem.fds()...)
	rep.After(c.mem.sent)
	return nil
}
