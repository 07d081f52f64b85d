// Accept errors the daemon outlives: a full descriptor table is a client
// holding too much, not a reason for the daemon to stop serving everyone.

package server

import (
	"errors"
	"syscall"
	"time"
)

// acceptBackoff bounds the wait after a failed accept: long enough that a
// full descriptor table is not hammered, short enough that the daemon
// serves again soon after descriptors come back (net/http waits the same).
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// acceptRetryable reports whether an accept error passes: the process or
// system is out of descriptors or memory for the moment, or the peer gave
// up before it was accepted. Any other error ends the accept loop.
func acceptRetryable(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS,
		syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR, syscall.EPROTO} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// acceptRetry is the state of an accept loop's backoff.
type acceptRetry struct{ delay time.Duration }

// next returns how long to wait after another failure in a row.
func (r *acceptRetry) next() time.Duration {
	if r.delay == 0 {
		r.delay = acceptBackoffMin
	} else {
		r.delay = min(2*r.delay, acceptBackoffMax)
	}
	return r.delay
}

// reset is called after an accept succeeds.
func (r *acceptRetry) reset() { r.delay = 0 }

// waitRetry sleeps d, or less when the server closes meanwhile; it
// reports whether the server is still open.
func (s *Server) waitRetry(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.done:
		return false
	}
}
