// The session doorbell (proto/bell.go): a post whose
// drainer sleeps sets the QP's or SRQ's bit in the session's bitmap and
// writes the session's one eventfd, so the process holds no descriptor
// per QP.

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
	one  [8]byte // the eventfd increment, kept here so a write allocates nothing
}

// openBell maps the session doorbell of an OPEN reply (descriptors: its
// memory, its eventfd), or closes them and fails.
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
	return &sessionBell{mem: mem, view: view, fd: fds[1], one: [8]byte{1}}, nil
}

// ring rings bell i. The caller has seen its drainer sleeping.
func (b *sessionBell) ring(i uint32) {
	if b.view.Ring(i) {
		unix.Write(b.fd, b.one[:])
	}
}

// close closes the doorbell; no object may ring it any more.
func (b *sessionBell) close() {
	unix.Close(b.fd)
	b.mem.Close()
}
