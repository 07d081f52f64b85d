// Eventfds: the doorbells clients ring and the completion events the
// daemon signals. They are non-blocking (the flag is shared by every
// process holding the eventfd), so the daemon waits on one through Go's
// poller and never ties up a thread.

package server

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// eventfd is an eventfd the daemon waits on.
type eventfd struct {
	f  *os.File
	fd int // the descriptor to send; f owns it (f.Fd would make it blocking)
}

func newEventfd() (*eventfd, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("rnicd: eventfd: %w", err)
	}
	return &eventfd{f: os.NewFile(uintptr(fd), "eventfd"), fd: fd}, nil
}

// wait waits for the eventfd to be signalled (and resets it), for at most
// timeout if it is positive. It returns an error once the eventfd is
// closed.
func (e *eventfd) wait(timeout time.Duration) error {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if err := e.f.SetReadDeadline(deadline); err != nil {
		return err
	}
	var b [8]byte
	_, err := e.f.Read(b[:])
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	return err
}

// close closes the eventfd, waking a wait.
func (e *eventfd) close() error { return e.f.Close() }

// one is the 8-byte increment written to an eventfd.
var one = [8]byte{1}

// signal adds one to an eventfd the daemon does not wait on (a client's
// notify eventfd). It never blocks: the counter would have to reach
// 2^64 − 1 first.
func signal(fd int) { unix.Write(fd, one[:]) }

func newNotifyFD() (int, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return -1, fmt.Errorf("rnicd: eventfd: %w", err)
	}
	return fd, nil
}
