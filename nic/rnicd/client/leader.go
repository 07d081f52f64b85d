// Reading the socket: the read token. A call reads its own reply: its
// caller holds the token from before its request is written until the
// reply came, polling the socket (proto/poll.go says why), and hands every
// other message it reads (another call's reply, an event) on as the
// background reader would. So the common case, one caller, has no hand-off
// between goroutines: a reply handed over costs a wake-up of the caller,
// as much as the daemon's work for most requests. The background reader
// (read, parked in the netpoller) reads whenever no caller holds the token:
// the events between calls, and the replies of callers that could not
// lead or stopped polling.
//
// The token is one word: bit 0 says it is held; the bits above count the
// times the background reader found the socket readable while it was held
// (a miss). A reader that misses parks again, and the netpoller will not
// wake it for the message it missed; so a holder that gives the token up
// after a miss during its hold takes it again and reads the socket until
// it is empty (handBack).

package client

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

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

// lead reads the socket for the call waiting on ch, whose request the
// caller sends with send while it holds the token, until its reply is in
// ch or polling ends (then the background reader reads on). ok is false
// if the token was held by another: ch is not read, nor is send called.
func (d *Device) lead(ch chan reply, send func() error) (sent error, ok bool) {
	misses, ok := d.tok.take()
	if !ok {
		return nil, false
	}
	defer func() { d.handBack(misses) }()
	if sent = send(); sent != nil {
		return sent, true
	}
	var p poll.Poller
	p.Received() // the window starts with the request
	defer p.Release()
	d.raw.Control(func(fd uintptr) {
		for len(ch) == 0 {
			n, oobn, flags, err := d.recv(int(fd))
			if err == unix.EAGAIN {
				if d.spin && p.Again() {
					continue
				}
				return
			}
			if !d.deliver(n, oobn, flags, err) {
				return
			}
		}
	})
	return nil, true // a closed connection: the background reader ends
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
