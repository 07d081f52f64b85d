// The session doorbell (proto/bell.go): a post whose
// drainer sleeps sets the QP's or SRQ's bit in the session's bitmap and
// sends a byte on the session's one doorbell socket, so the process holds
// no descriptor per QP.

package client

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

// sessionBell is the client's side of the session doorbell.
type sessionBell struct {
	mem  *memory.Shared
	view *proto.SessionBell
	fd   int
	one  [1]byte // the wake-up byte, kept here so a send allocates nothing
}

// openBell maps the session doorbell of an OPEN reply (descriptors: its
// memory, its socket), or closes them and fails.
func openBell(fds []int) (*sessionBell, error) {
	if len(fds) != 2 {
		closeFDs(fds)
		return nil, fmt.Errorf("rnicd: OPEN reply with %d descriptors, want the session doorbell's 2: %w", len(fds), proto.ErrMalformed)
	}
	mem, err := mapRing(fds[0], proto.BellAreaLen)
	if err != nil {
		unix.Close(fds[1])
		return nil, err
	}
	view, err := proto.NewSessionBell(mem.Bytes())
	if err != nil {
		mem.Close()
		unix.Close(fds[1])
		return nil, err
	}
	return &sessionBell{mem: mem, view: view, fd: fds[1], one: [1]byte{1}}, nil
}

// ring rings bell i. The caller has seen its drainer sleeping. The send
// never blocks: a full socket (EAGAIN) means the daemon has bytes to read
// and will take the bit after reading them; a daemon gone (EPIPE, no
// SIGPIPE) ends the session anyway.
func (b *sessionBell) ring(i uint32) {
	if b.view.Ring(i) {
		unix.Sendto(b.fd, b.one[:], unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, nil)
	}
}

// close closes the doorbell; no object may ring it any more.
func (b *sessionBell) close() {
	unix.Close(b.fd)
	b.mem.Close()
}
