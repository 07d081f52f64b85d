// A client's connection request may go unanswered for a long time: the
// CM sends its REQ again after each response timeout, as rdma_cm does,
// before it gives up. rping itself prints nothing meanwhile; rnic says
// once, on the error stream, what it is waiting for.

package rping

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// waitNoticeAfter is how long a connect may take before the notice.
var waitNoticeAfter = time.Second

// notice writes line to w once if stop is not called within d.
type notice struct {
	stopc chan struct{}
	wg    sync.WaitGroup
}

func noticeAfter(w io.Writer, d time.Duration, line string) *notice {
	n := &notice{stopc: make(chan struct{})}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			fmt.Fprintln(w, line)
		case <-n.stopc:
		}
	}()
	return n
}

// stop cancels the notice and returns once it can no longer be written.
func (n *notice) stop() {
	close(n.stopc)
	n.wg.Wait()
}

// connectRetries says how the connection manager retries an unanswered
// connection request: rdma_cm's REQ (response timeout 20, packet life
// time 18, 15 retries) as the kernel's; iWARP's is a TCP connection (the
// kernel's, or the TAP-mode NIC's own) and then the MPA Request.
func (c *Config) connectRetries() string {
	if c.IWARP {
		return "a TCP connection, then an MPA Request"
	}
	return "rdma_cm sends its REQ up to 16 times, about 6.4 s apart, then gives up"
}
