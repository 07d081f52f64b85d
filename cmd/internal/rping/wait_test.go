package rping

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/rdmacm"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRoCENoAnswer: a client whose REQs go unanswered says, after a
// moment, what it waits for, and ends with an error that says nothing
// answered and how often it asked (rping's RDMA_CM_EVENT_UNREACHABLE),
// instead of waiting silently. The CM's timeouts are shortened here; by
// default they add up to about 103 s.
func TestRoCENoAnswer(t *testing.T) {
	client := netip.MustParseAddr("127.0.9.78")
	n, err := openKernelNIC(client, nil, &Config{})
	if err != nil {
		t.Fatal(err)
	}
	cn, err := NewRoCE(n, rdmacm.Config{ResponseTimeout: 14, PacketLifeTime: 14, MaxRetries: 2}) // ~200 ms a try
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cn.Close(); n.Close() }()
	prev := waitNoticeAfter
	waitNoticeAfter = 50 * time.Millisecond
	defer func() { waitNoticeAfter = prev }()

	var errOut lockedBuffer
	silent := netip.AddrPortFrom(netip.MustParseAddr("127.0.9.77"), 24890) // nothing listens there
	cfg := Config{Addr: silent.Addr(), Port: silent.Port(), Source: client, Count: 1, Err: &errOut}
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = ping(ctx, &cfg, cn, silent)
	want := "rping: connect to 127.0.9.77:24890: no answer to the connection request (rdma_cm sent its REQ 3 times): rdmacm: timed out"
	if err == nil || err.Error() != want {
		t.Errorf("ping = %v, want %q", err, want)
	}
	if got := errOut.String(); !strings.HasPrefix(got, "rping: waiting for 127.0.9.77:24890 to answer the connection request (") ||
		strings.Count(got, "\n") != 1 {
		t.Errorf("stderr %q, want one line saying what it waits for", got)
	}
}

// withoutWaitNotice drops the line a client writes when its connection
// takes more than waitNoticeAfter (a REQ lost or rejected on a busy
// machine).
func withoutWaitNotice(s string) string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "rping: waiting for ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
