// The session's completion channel: every CQ of the
// device holds a slot of one channel's event set, and one goroutine per
// device turns the channel's socket and set into the CQs' Notify, so a
// CQ costs no descriptor and no goroutine of its own.

package client

import (
	"fmt"
	"os"
	"sync"

	"github.com/rnic/rnic/nic/rnicd/proto"
)

type cqChannel struct {
	h      uint32
	mem    ringRef
	events *proto.ChannelEvents
	fd     *os.File
	done   chan struct{}

	mu  sync.Mutex     // cqs, and sends on and closes of their Notify
	cqs map[uint32]*CQ // by slot
}

// compChannel returns the device's completion channel, creating it with
// the first CQ. The caller holds d.arena.mu.
func (d *Device) compChannel() (*cqChannel, error) {
	if d.comp != nil {
		return d.comp, nil
	}
	var rep proto.CreateChannelReply
	fds, err := d.call(proto.OpCreateChannel, &proto.Empty{}, nil, &rep)
	if err != nil {
		return nil, err
	}
	mem, ref, rest, err := d.takeRings("CREATE_CHANNEL", rep.Place, proto.ChannelAreaLen, fds, 1)
	if err != nil {
		closeFDs(rest)
		ref.release()
		return nil, err
	}
	events, err := proto.NewChannelEvents(mem)
	if err != nil {
		closeFDs(rest)
		ref.release()
		return nil, fmt.Errorf("rnicd: CREATE_CHANNEL: %w", err)
	}
	ch := &cqChannel{h: rep.Channel, mem: ref, events: events, fd: os.NewFile(uintptr(rest[0]), "rnicd-channel"),
		done: make(chan struct{}), cqs: map[uint32]*CQ{}}
	go ch.wait()
	d.comp = ch
	return ch, nil
}

// wait hands each fired slot's event to its CQ until the socket closes.
// It drains the socket before it takes the set, so a slot fired after the
// take comes with a byte the next read returns for (or, if the daemon
// found the socket full, with the bytes still in it).
func (ch *cqChannel) wait() {
	defer close(ch.done)
	var b [64]byte
	for {
		if _, err := ch.fd.Read(b[:]); err != nil {
			return
		}
		ch.mu.Lock()
		ch.events.Take(func(i uint32) {
			if c := ch.cqs[i]; c != nil {
				select {
				case c.notify <- struct{}{}:
				default:
				}
			}
		})
		ch.mu.Unlock()
	}
}

func (ch *cqChannel) add(slot uint32, c *CQ) {
	ch.mu.Lock()
	ch.cqs[slot] = c
	ch.mu.Unlock()
}

// remove takes the CQ off the channel and closes its Notify.
func (ch *cqChannel) remove(slot uint32, c *CQ) {
	ch.mu.Lock()
	if ch.cqs[slot] == c {
		delete(ch.cqs, slot)
	}
	close(c.notify)
	ch.mu.Unlock()
}

// close stops the goroutine and frees the set (every CQ is released).
func (ch *cqChannel) close() {
	ch.fd.Close()
	<-ch.done
	ch.mem.release()
}
