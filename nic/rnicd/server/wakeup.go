// Wake-up sockets: the session doorbell a client rings and the completion
// channel the daemon signals. Each is a Unix stream socketpair whose
// daemon end never leaves the daemon: the client gets the other end, a
// distinct open file description, so nothing it does to its end (clear
// O_NONBLOCK, fill it, never read it, shut it down) reaches the daemon's.
// An eventfd would be one open file shared by both, its O_NONBLOCK the
// client's to clear, and then every daemon read or write of it would
// block an OS thread.
//
// A byte on either socket is only a wake-up: what it announces is already
// in shared memory (the doorbell's bitmap, the channel's event set), so a
// send that fails because the reader does not read loses nothing as long
// as the reader drains the socket before it scans the bitmap: the bytes
// it has not read keep its end readable.

package server

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// wakePair is a wake-up socketpair: the daemon's end and the client's,
// which the reply that creates it sends and then closes.
type wakePair struct {
	own, peer int
}

// newWakePair makes a socketpair whose daemon end only sends (sendOnly)
// or only receives: the other direction is shut, so a client writing into
// a channel fills nothing of the daemon's and a client reading its
// doorbell end sees end-of-file at once.
func newWakePair(sendOnly bool) (wakePair, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return wakePair{}, fmt.Errorf("rnicd: wake-up socketpair: %w", err)
	}
	how := unix.SHUT_WR
	if sendOnly {
		how = unix.SHUT_RD
	}
	if err := unix.Shutdown(fds[0], how); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return wakePair{}, fmt.Errorf("rnicd: wake-up socketpair: shutdown: %w", err)
	}
	return wakePair{own: fds[0], peer: fds[1]}, nil
}

// sendPeer sends the client's end with rep and closes the daemon's copy
// of it once sent.
func (p wakePair) sendPeer(rep *Reply) (fd int) {
	rep.After(func() { unix.Close(p.peer) })
	return p.peer
}

// wakeByte is what the daemon sends: its value means nothing.
var wakeByte = []byte{1}

// wakeUp sends one wake-up byte on the daemon's end of a channel. It never
// blocks: MSG_DONTWAIT holds whatever the socket's flags, and a full
// socket (EAGAIN) or a client that shut or closed its end (EPIPE, no
// SIGPIPE) just drops the byte, which the unread ones, or nobody, would
// have read.
func wakeUp(fd int) { unix.Sendto(fd, wakeByte, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, nil) }

// wakeReader is the daemon's end of a doorbell, read through Go's
// poller: a wait parks a goroutine, never a thread.
type wakeReader struct {
	f   *os.File
	buf [64]byte
}

func newWakeReader(fd int) *wakeReader { return &wakeReader{f: os.NewFile(uintptr(fd), "rnicd-wake")} }

var errWakeClosed = errors.New("rnicd: the client closed its doorbell")

// wait waits until bytes arrive and drains up to a buffer of them (more
// make the next wait return at once), or until timeout if it is positive.
// It returns an error once the reader is closed or the client closed its
// end.
func (w *wakeReader) wait(timeout time.Duration) error {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if err := w.f.SetReadDeadline(deadline); err != nil {
		return err
	}
	_, err := w.f.Read(w.buf[:])
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil
	case errors.Is(err, io.EOF):
		return errWakeClosed
	}
	return err
}

// close closes the daemon's end, waking a wait.
func (w *wakeReader) close() error { return w.f.Close() }
