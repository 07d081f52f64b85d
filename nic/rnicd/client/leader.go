// Reading the socket: the read token. A call reads its own reply: its
// caller holds the token from before its request is written until the
// reply came, polling the socket (proto/poll.go says why), and hands every
// other message it reads (another call's reply, an event) on as the
// background reader would. So the common case, one caller, has no hand-off
// between goroutines: a reply handed over costs a wake-up of the caller,
// as much as the daemon's work for most requests. The background reader
// (read, parked in the netpoller) reads whenever no caller holds the token:
// the events between calls, and the replies of callers that could not
// lead or stopped polling. A caller that found the token held follows: it
// waits for its reply or for the token, which a leader passes on to a
// follower when it is done (passOn), so that concurrent calls too read
// most of their replies themselves.
//
// The token is one word: bit 0 says it is held; the bits above count the
// times the background reader found the socket readable while it was held
// (a miss). A reader that misses parks again, and the netpoller will not
// wake it for the message it missed; so a holder that gives the token up
// after a miss during its hold takes it again and reads the socket until
// it is empty (handBack).

package client

import (
	"slices"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/transport/clock/nap"
	"github.com/rnic/rnic/transport/poll"
)

// readToken says who may read the socket.
type readToken struct{ s atomic.Uint64 }

// take takes the token if it is free, returning the misses so far.
func (t *readToken) take() (misses uint64, ok bool) {
	for {
		s := t.s.Load()
		if s&1 != 0 {
			return 0, false
		}
		if t.s.CompareAndSwap(s, s|1) {
			return s >> 1, true
		}
	}
}

// takeOrMiss takes the token if it is free, else counts a miss.
func (t *readToken) takeOrMiss() bool {
	for {
		s := t.s.Load()
		if s&1 == 0 {
			if t.s.CompareAndSwap(s, s|1) {
				return true
			}
		} else if t.s.CompareAndSwap(s, s+2) {
			return false
		}
	}
}

// release gives the token up; it returns the misses so far.
func (t *readToken) release() uint64 { return t.s.Add(^uint64(0)) >> 1 }

// beforeHandBack, if set, runs as a holder is about to give the token up
// (tests that send a message then).
var beforeHandBack func()

// recv reads one message into the token's buffers without waiting. The
// caller holds the token. It allocates nothing (unix.Recvmsg allocates
// an address on every call, and a caller that polls calls it thousands of
// times a second).
func (d *Device) recv(fd int) (n, oobn, flags int, err error) {
	h := &d.rhdr
	h.Iov, h.Iovlen = &d.riov, 1
	h.Control = &d.roob[0]
	h.SetControllen(len(d.roob))
	h.Flags = 0
	for {
		r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(h)),
			unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		switch e {
		case 0:
			return int(r), int(h.Controllen), int(h.Flags), nil
		case unix.EINTR:
			continue
		default:
			return 0, 0, 0, e
		}
	}
}

// A waiter is a call's state while it waits for its reply. Waiters are
// reused (Device.waiters), so that a call allocates little; nothing is
// sent to a waiter's ch once its call took ch off pending (hand).
type waiter struct {
	d    *Device
	ch   chan reply // the reply, from whoever read it
	msg  []byte     // the request
	fds  []int      // sent with it
	p    poll.Poller
	poll func(fd uintptr) // w.pollReply, made once

	lead      chan struct{} // the token is free: a follower may take it
	following bool          // w is in d.followers
}

func (d *Device) getWaiter() *waiter {
	if w, ok := d.waiters.Get().(*waiter); ok {
		return w
	}
	w := &waiter{d: d, ch: make(chan reply, 1), msg: make([]byte, 0, 256), lead: make(chan struct{}, 1)}
	w.poll = w.pollReply
	return w
}

// putWaiter keeps w for another call. Its call has taken w.ch off
// pending: a reply still in it (a second one) is dropped.
func (d *Device) putWaiter(w *waiter) {
	select {
	case r := <-w.ch:
		closeFDs(r.fds)
	default:
	}
	select {
	case <-w.lead:
	default:
	}
	w.fds = nil
	d.waiters.Put(w)
}

// send writes the call's request.
func (w *waiter) send() error { return w.d.write(w.msg, w.fds) }

// start sends w's request, its caller leading if the token is free, else
// following. A daemon in this process answers only once this goroutine
// parks (proto.PollsFor): then the background reader reads the reply.
func (d *Device) start(w *waiter) error {
	if !d.spin {
		return w.send()
	}
	if err, led := d.lead(w); led {
		return err
	}
	return d.follow(w)
}

// lead reads the socket for the call w, whose request it sends while it
// holds the token, until its reply is in w.ch or polling ends (then the
// background reader reads on). ok is false if the token was held by
// another: then w.ch is not read, nor is the request sent.
func (d *Device) lead(w *waiter) (sent error, ok bool) {
	misses, ok := d.tok.take()
	if !ok {
		return nil, false
	}
	if sent = w.send(); sent == nil {
		d.pollFor(w)
	}
	d.handBack(misses)
	d.passOn(w)
	return sent, true
}

// pollFor reads the socket for w (the caller holds the token).
func (d *Device) pollFor(w *waiter) {
	w.p.Received()        // the window starts now
	d.raw.Control(w.poll) // fails on a closed connection: the background reader ends
	w.p.Release()
}

// follow sends the request of w, whose caller found the token held: it
// waits for its reply as a follower, which a leader that is done wakes to
// lead (passOn), rather than leave the socket to the background reader
// and every reply to a hand-off.
func (d *Device) follow(w *waiter) error {
	d.mu.Lock()
	d.followers = append(d.followers, w)
	d.mu.Unlock()
	d.nfollow.Add(1)
	w.following = true
	return w.send()
}

// unfollow ends w's following, if it followed.
func (d *Device) unfollow(w *waiter) {
	if !w.following {
		return
	}
	w.following = false
	d.mu.Lock()
	if i := slices.Index(d.followers, w); i >= 0 {
		d.followers = slices.Delete(d.followers, i, i+1)
	}
	d.mu.Unlock()
	d.nfollow.Add(-1)
}

// passOn wakes the first follower (but self) still waiting for its reply
// to take the token, which the caller has just given up.
func (d *Device) passOn(self *waiter) {
	if d.nfollow.Load() == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.followers {
		if f != self && len(f.ch) == 0 {
			select {
			case f.lead <- struct{}{}:
			default: // woken already
			}
			return
		}
	}
}

// leadAgain takes the token for the follower w, if it is still free, and
// reads the socket for w's reply.
func (d *Device) leadAgain(w *waiter) {
	misses, ok := d.tok.take()
	if !ok {
		return
	}
	d.pollFor(w)
	d.handBack(misses)
	d.passOn(w)
}

// pollReply reads fd, handing on what is not w's reply, until w's reply
// came or polling ends. Between empty reads it yields its thread, as the C
// library does: on a busy machine the daemon, whose work the reply waits
// for, may need this CPU. Measured on a loaded 2-core machine taking
// 1,000 QPs to RTS through rnicd: 292-318 µs and 163-195 µs of this
// process's CPU per QP without, 131-153 and 25-32 with.
func (w *waiter) pollReply(fd uintptr) {
	d := w.d
	for len(w.ch) == 0 {
		n, oobn, flags, err := d.recv(int(fd))
		if err == unix.EAGAIN {
			if d.spin && w.p.Again() {
				nap.Yield()
				continue
			}
			return
		}
		if !d.deliver(n, oobn, flags, err) {
			return
		}
	}
}

// handBack gives the token up. If the background reader missed a message
// meanwhile, the token is taken again and the socket read until it is
// empty, and so on until a hold passes without a miss or another holds the
// token: that holder is responsible then.
func (d *Device) handBack(misses uint64) {
	if beforeHandBack != nil {
		beforeHandBack()
	}
	for d.tok.release() != misses {
		var ok bool
		if misses, ok = d.tok.take(); !ok {
			return
		}
		d.raw.Control(func(fd uintptr) {
			for {
				n, oobn, flags, err := d.recv(int(fd))
				if err == unix.EAGAIN || !d.deliver(n, oobn, flags, err) {
					return
				}
			}
		})
	}
}
