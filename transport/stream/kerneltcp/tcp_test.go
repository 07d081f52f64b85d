// Tests of kernel TCP over loopback (127.0.0.1 and ::1 only): megabytes
// both ways with backpressure, orderly close, reset, refusal, linger,
// idempotent Close/Abort, and no goroutine left behind.

package kerneltcp_test

import (
	"errors"
	"io"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/kerneltcp"
	"github.com/rnic/rnic/transport/stream/streamtest"
)

// tcpPair listens on addr with cfg, dials it, and returns both ends with
// their receivers installed.
func tcpPair(t *testing.T, addr string, cfg stream.TCPConfig) (client, server stream.Conn, cs, ss *streamtest.Sink) {
	t.Helper()
	n := &kerneltcp.Network{Config: cfg}
	l, err := n.Listen(netip.AddrPortFrom(netip.MustParseAddr(addr), 0))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan stream.Conn, 1)
	var (
		mu sync.Mutex
		s  *streamtest.Sink
	)
	l.SetAcceptor(func(c stream.Conn) {
		mu.Lock()
		s = streamtest.NewSink(c, nil)
		mu.Unlock()
		accepted <- c
	})
	done := make(chan struct{})
	var derr error
	n.Dial(netip.Addr{}, l.Addr(), func(c stream.Conn, err error) {
		if err == nil {
			cs = streamtest.NewSink(c, nil)
		}
		client, derr = c, err
		close(done)
	})
	<-done
	if derr != nil {
		t.Fatal(derr)
	}
	select {
	case server = <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing accepted")
	}
	mu.Lock()
	ss = s
	mu.Unlock()
	return client, server, cs, ss
}

func TestTCPExchange(t *testing.T) {
	streamtest.CheckNoLeak(t)
	for _, addr := range streamtest.Loopbacks {
		t.Run(addr, func(t *testing.T) {
			c, s, cs, ss := tcpPair(t, addr, stream.TCPConfig{SendBuffer: 128 << 10, ReadBuffer: 16 << 10})
			if !c.Active() || s.Active() {
				t.Errorf("Active: client %v server %v", c.Active(), s.Active())
			}
			if c.RemoteAddr() != s.LocalAddr() || c.LocalAddr() != s.RemoteAddr() || c.LocalAddr().Addr().String() != addr {
				t.Errorf("addresses: %v->%v, %v->%v", c.LocalAddr(), c.RemoteAddr(), s.LocalAddr(), s.RemoteAddr())
			}
			const n = 8 << 20
			up, down := streamtest.Pattern(3, n), streamtest.Pattern(4, n)
			fc := streamtest.NewFeeder(c, up, 5, 100000, true)
			fs := streamtest.NewFeeder(s, down, 6, 100000, true)
			go fc.Pump()
			go fs.Pump()
			streamtest.WaitFeeder(t, "client", fc)
			streamtest.WaitFeeder(t, "server", fs)
			ss.Wait(t, "server")
			cs.Wait(t, "client")
			streamtest.CheckDelivered(t, "server", ss, up, io.EOF)
			streamtest.CheckDelivered(t, "client", cs, down, io.EOF)
			split, coalesced := streamtest.SplitAndCoalesced(fc.Writes, ss.Chunks)
			t.Logf("client: %d writes (%d refused), server got %d chunks; split %v coalesced %v",
				len(fc.Writes), fc.Refusals, len(ss.Chunks), split, coalesced)
			if fc.Refusals+fs.Refusals == 0 {
				t.Log("the send buffer never filled (the kernel took everything at once)")
			}
			if _, err := c.Write([]byte("x")); !errors.Is(err, stream.ErrClosed) {
				t.Errorf("Write after Close: %v", err)
			}
			for _, x := range []stream.Conn{c, s} {
				if err := x.Close(); err != nil {
					t.Errorf("second Close: %v", err)
				}
				if err := x.Abort(); err != nil {
					t.Errorf("Abort after close: %v", err)
				}
			}
		})
	}
}

func TestTCPAbort(t *testing.T) {
	streamtest.CheckNoLeak(t)
	for _, addr := range streamtest.Loopbacks {
		t.Run(addr, func(t *testing.T) {
			c, s, cs, ss := tcpPair(t, addr, stream.TCPConfig{})
			if _, err := c.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			// Wait for the bytes, so the abort is a reset and not a
			// refusal of unread data.
			for deadline := time.Now().Add(10 * time.Second); ; {
				got, _, _ := ss.Result()
				if string(got) == "hello" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("hello never arrived")
				}
				time.Sleep(time.Millisecond)
			}
			if err := c.Abort(); err != nil {
				t.Fatal(err)
			}
			if err := c.Abort(); err != nil {
				t.Errorf("second Abort: %v", err)
			}
			if err := c.Close(); err != nil {
				t.Errorf("Close after Abort: %v", err)
			}
			cs.Wait(t, "client")
			ss.Wait(t, "server")
			streamtest.CheckDelivered(t, "client", cs, nil, stream.ErrAborted)
			streamtest.CheckDelivered(t, "server", ss, []byte("hello"), stream.ErrReset)
			if _, err := c.Write([]byte("x")); !errors.Is(err, stream.ErrClosed) {
				t.Errorf("client Write after Abort: %v, want ErrClosed", err)
			}
			if _, err := s.Write([]byte("x")); !errors.Is(err, stream.ErrReset) {
				t.Errorf("server Write after reset: %v, want ErrReset", err)
			}
			s.Abort()
		})
	}
}

func TestTCPHalfCloseAndLinger(t *testing.T) {
	streamtest.CheckNoLeak(t)
	c, s, cs, ss := tcpPair(t, "127.0.0.1", stream.TCPConfig{Linger: 200 * time.Millisecond})
	c.Write([]byte("request"))
	c.Close()
	ss.Wait(t, "server")
	streamtest.CheckDelivered(t, "server", ss, []byte("request"), io.EOF)
	// The server answers after the client's FIN; the client still
	// receives, but the server never closes: the client's linger runs out.
	if _, err := s.Write([]byte("response")); err != nil {
		t.Fatal(err)
	}
	cs.Wait(t, "client")
	streamtest.CheckDelivered(t, "client", cs, []byte("response"), stream.ErrTimeout)
	s.Abort()
}

func TestTCPDialErrors(t *testing.T) {
	streamtest.CheckNoLeak(t)
	// A port nobody listens on: listen, note the port, close.
	l, err := kerneltcp.Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr()
	if _, err := kerneltcp.Listen(addr); !errors.Is(err, stream.ErrAddrInUse) {
		t.Errorf("second Listen: %v, want ErrAddrInUse", err)
	}
	l.Close()
	if err := l.Close(); err != nil {
		t.Errorf("second listener Close: %v", err)
	}
	if _, err := kerneltcp.Dial(netip.Addr{}, addr, time.Second); !errors.Is(err, stream.ErrRefused) {
		t.Errorf("Dial: %v, want ErrRefused", err)
	}
	done := make(chan error, 1)
	(&kerneltcp.Network{}).Dial(netip.MustParseAddr("127.0.0.1"), addr, func(c stream.Conn, err error) { done <- err })
	if err := <-done; !errors.Is(err, stream.ErrRefused) {
		t.Errorf("async Dial: %v, want ErrRefused", err)
	}
	// Cancel before the dial goroutine finishes: done says ErrCanceled
	// (or, if the refusal won the race, ErrRefused), exactly once.
	cancel := (&kerneltcp.Network{}).Dial(netip.Addr{}, addr, func(c stream.Conn, err error) { done <- err })
	cancel()
	if err := <-done; !errors.Is(err, stream.ErrCanceled) && !errors.Is(err, stream.ErrRefused) {
		t.Errorf("canceled Dial: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		t.Errorf("done called twice (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestTCPBackpressure(t *testing.T) {
	streamtest.CheckNoLeak(t)
	// The server reads nothing (no receiver): the kernel buffers fill,
	// then the client's queue, then Write refuses, without blocking.
	n := &kerneltcp.Network{Config: stream.TCPConfig{SendBuffer: 256 << 10}}
	l, err := n.Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan stream.Conn, 1)
	l.SetAcceptor(func(c stream.Conn) { accepted <- c })
	c, err := n.DialContext(t.Context(), netip.Addr{}, l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	writable := make(chan struct{}, 1)
	c.SetWritable(func() { writable <- struct{}{} })
	cs := streamtest.NewSink(c, nil)
	chunk := make([]byte, 32<<10)
	total := 0
	start := time.Now()
	for {
		_, err := c.Write(chunk)
		if errors.Is(err, stream.ErrWouldBlock) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		total += len(chunk)
		if time.Since(start) > 20*time.Second {
			t.Fatal("Write never refused")
		}
	}
	if c.Buffered() == 0 || c.Buffered() > 256<<10 {
		t.Errorf("Buffered = %d when refusing", c.Buffered())
	}
	t.Logf("refused after %d bytes, %d queued", total, c.Buffered())
	// Reading on the server drains the client and calls writable.
	ss := streamtest.NewSink(s, nil)
	select {
	case <-writable:
	case <-time.After(10 * time.Second):
		t.Fatal("writable never called")
	}
	c.Close()
	ss.Wait(t, "server")
	if got, _, err := ss.Result(); len(got) != total || err != io.EOF {
		t.Errorf("server got %d bytes (%v), want %d", len(got), err, total)
	}
	s.Close()
	cs.Wait(t, "client")
}

func TestTCPListenerAcceptorNil(t *testing.T) {
	streamtest.CheckNoLeak(t)
	l, err := kerneltcp.Listen(netip.MustParseAddrPort("[::1]:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.SetAcceptor(nil) // connections are reset
	c, err := kerneltcp.Dial(netip.Addr{}, l.Addr(), time.Second)
	if errors.Is(err, stream.ErrReset) {
		return // the RST beat the connect
	}
	if err != nil {
		t.Fatal(err)
	}
	s := streamtest.NewSink(c, nil)
	s.Wait(t, "client")
	if _, _, err := s.Result(); !errors.Is(err, stream.ErrReset) && !errors.Is(err, io.EOF) {
		t.Errorf("client of a nil acceptor: %v", err)
	}
	c.Abort()
	l.Close()
	if !strings.HasPrefix(l.Addr().String(), "[::1]:") {
		t.Errorf("Addr = %v", l.Addr())
	}
}
