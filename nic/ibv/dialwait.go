// Dialing a side channel the way the real tools' users expect: a server
// that is not listening yet is tried again for a moment, a peer that does
// not answer at all (no ARP reply on a TAP, a SYN into a void) is given up
// on after a bound instead of waited for forever, and a wait longer than
// a second is said, once.

package ibv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// DialOptions tune DialWait.
type DialOptions struct {
	// Retry is how long a refused connection is tried again (the server
	// may not be listening yet); negative tries once.
	Retry time.Duration
	// Timeout bounds the whole dial (DefaultDialTimeout if zero, at
	// least Retry): a connect nothing answers, which the kernel would
	// retry for two minutes and a device's own stack might forever.
	Timeout time.Duration
	// Notice, if set, gets one line once the dial has taken NoticeAfter
	// (a second if zero): what is waited for, and for how long.
	Notice      io.Writer
	NoticeAfter time.Duration
	// Who starts the notice ("perf"); What names the connection ("the
	// side channel").
	Who, What string
}

// DefaultDialTimeout is DialOptions.Timeout's default.
const DefaultDialTimeout = 20 * time.Second

// ErrNoAnswer: nothing answered the connection within the timeout.
var ErrNoAnswer = errors.New("no answer")

// DialWait connects to remote from local through n as DialOptions say.
// It returns ctx's error when ctx ends first, ErrNoAnswer (wrapped) when
// the timeout does.
func DialWait(ctx context.Context, n Network, local netip.Addr, remote netip.AddrPort, o DialOptions) (net.Conn, error) {
	timeout := max(o.Timeout, o.Retry)
	if o.Timeout == 0 {
		timeout = max(DefaultDialTimeout, o.Retry)
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if o.Notice != nil {
		stop := noticeAfter(o.Notice, cmp.Or(o.NoticeAfter, time.Second), fmt.Sprintf(
			"%s: waiting for %v to accept %s from %v (%s; Ctrl-C stops)",
			cmp.Or(o.Who, "ibv"), remote, cmp.Or(o.What, "the connection"), local, giveUpRule(o.Retry, timeout)))
		defer stop()
	}
	retryUntil := time.Now().Add(o.Retry)
	for {
		conn, err := n.Dial(dctx, local, remote)
		switch {
		case err == nil:
			return conn, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case dctx.Err() != nil:
			return nil, fmt.Errorf("%w within %v: no server, or not reachable from %v", ErrNoAnswer, timeout, local)
		case !DialRetryable(n, err) || o.Retry < 0 || time.Now().After(retryUntil):
			return nil, err
		}
		select {
		case <-dctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// giveUpRule says when DialWait stops: a refused connection (no server
// listening yet) is retried only for retry, a silent peer is waited for up
// to timeout; saying only the latter promised a wait the tool did not make.
func giveUpRule(retry, timeout time.Duration) string {
	switch {
	case retry < 0:
		return fmt.Sprintf("gives up at once if refused, after %v if nothing answers", timeout)
	case retry < timeout:
		return fmt.Sprintf("gives up after %v if refused, after %v if nothing answers", retry, timeout)
	}
	return fmt.Sprintf("gives up after %v", timeout)
}

// noticeAfter writes line to w after d unless the returned stop is
// called first; stop returns once the line can no longer be written.
func noticeAfter(w io.Writer, d time.Duration, line string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			fmt.Fprintln(w, line)
		case <-done:
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
