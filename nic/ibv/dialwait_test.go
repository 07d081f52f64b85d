package ibv

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"
)

// silentNetwork's dials wait until their context ends, as a connect to a
// host that never answers does on a device's own TCP stack.
type silentNetwork struct{ dials int }

func (n *silentNetwork) Listen(netip.AddrPort) (net.Listener, error) {
	return nil, errors.ErrUnsupported
}
func (n *silentNetwork) Dial(ctx context.Context, _ netip.Addr, _ netip.AddrPort) (net.Conn, error) {
	n.dials++
	<-ctx.Done()
	return nil, ctx.Err()
}

// lockedBuffer is written by the notice's goroutine.
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

// TestDialWaitNoAnswer: a dial nothing answers ends at the timeout with
// ErrNoAnswer, having said once what it waited for.
func TestDialWaitNoAnswer(t *testing.T) {
	var notice lockedBuffer
	n := &silentNetwork{}
	start := time.Now()
	_, err := DialWait(context.Background(), n, netip.MustParseAddr("10.0.0.2"), netip.MustParseAddrPort("10.0.0.3:18515"),
		DialOptions{Retry: 50 * time.Millisecond, Timeout: 300 * time.Millisecond, Notice: &notice, NoticeAfter: 100 * time.Millisecond,
			Who: "perf", What: "the side channel"})
	took := time.Since(start)
	if !errors.Is(err, ErrNoAnswer) || took < 300*time.Millisecond || took > 10*time.Second {
		t.Errorf("err %v after %v, want ErrNoAnswer after 300ms", err, took)
	}
	want := "perf: waiting for 10.0.0.3:18515 to accept the side channel from 10.0.0.2 (gives up after 50ms if refused, after 300ms if nothing answers; Ctrl-C stops)\n"
	if notice.String() != want {
		t.Errorf("notice %q, want %q", notice.String(), want)
	}
}

// TestDialWaitCancelled: the caller's cancellation is its own error, not
// a timeout, and a quick connection says nothing.
func TestDialWaitCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var notice lockedBuffer
	_, err := DialWait(ctx, &silentNetwork{}, netip.Addr{}, netip.MustParseAddrPort("10.0.0.3:1"),
		DialOptions{Timeout: 5 * time.Second, Notice: &notice, NoticeAfter: time.Hour})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNoAnswer) || notice.String() != "" {
		t.Errorf("err %v, notice %q", err, notice.String())
	}
}

// TestDialWaitRefusedRetried: a refused kernel connection is tried again
// until Retry, then its error returned; a listener that comes up in that
// time is reached.
func TestDialWaitRefusedRetried(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddrPort(l.Addr().String())
	l.Close() // refused from now on
	_, err = DialWait(context.Background(), KernelNetwork{}, netip.Addr{}, addr, DialOptions{Retry: 200 * time.Millisecond})
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("refused: err %v", err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		if l, err := net.Listen("tcp", addr.String()); err == nil {
			defer l.Close()
			if c, err := l.Accept(); err == nil {
				c.Close()
			}
		}
	}()
	c, err := DialWait(context.Background(), KernelNetwork{}, netip.Addr{}, addr, DialOptions{Retry: 10 * time.Second})
	if err != nil {
		t.Fatalf("listener up after 100ms: %v", err)
	}
	c.Close()
}
