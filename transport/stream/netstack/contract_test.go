// The Conn/Dialer/Listener contract tests, run against kernel TCP on
// loopback (the reference: a test that fails there is a wrong test) and
// against netstack on two gVisor stacks back to back, IPv4 and IPv6:
// megabytes both ways with backpressure, half-close, reset, refusal, dial
// timeout and cancel, listener close, address in use, onClose exactly
// once, callbacks never concurrent, no goroutine left behind.

package netstack_test

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/kerneltcp"
	"github.com/rnic/rnic/transport/stream/netstack"
	"github.com/rnic/rnic/transport/stream/streamtest"
)

// contractPair listens on addr of server, dials it from client, and
// returns both ends with guarded receivers installed.
func contractPair(t *testing.T, e *endChecks, client, server stream.Network, addr string) (c, s stream.Conn, cs, ss *streamtest.Sink, cg, sg *callGuard) {
	t.Helper()
	l, err := server.Listen(netip.AddrPortFrom(netip.MustParseAddr(addr), 0))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cg, sg = e.guard("client"), e.guard("server")
	accepted := make(chan stream.Conn, 1)
	var mu sync.Mutex
	l.SetAcceptor(func(c stream.Conn) {
		mu.Lock()
		ss = e.sink("server", guardedSink(c, sg))
		mu.Unlock()
		accepted <- c
	})
	done := make(chan struct{})
	var derr error
	client.Dial(netip.Addr{}, l.Addr(), func(conn stream.Conn, err error) {
		if err == nil {
			cs = e.sink("client", guardedSink(conn, cg))
		}
		c, derr = conn, err
		close(done)
	})
	<-done
	if derr != nil {
		t.Fatal(derr)
	}
	select {
	case s = <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing accepted")
	}
	mu.Lock()
	defer mu.Unlock()
	return c, s, cs, ss, cg, sg
}

// waitArrived waits until s has received want (a prefix check each time).
func waitArrived(t *testing.T, s *streamtest.Sink, want []byte) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		got, _, _ := s.Result()
		if len(got) >= len(want) {
			if string(got[:len(want)]) != string(want) {
				t.Fatalf("received bytes differ at %d", streamtest.FirstDiff(got, want))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d bytes arrived", len(got), len(want))
		}
		time.Sleep(time.Millisecond)
	}
}

func TestContractExchange(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg contractTarget, addr string) {
		e := newEndChecks(t)
		streamtest.CheckNoLeak(t)
		client, server, _ := tg.setup(t, stream.TCPConfig{SendBuffer: 128 << 10, ReadBuffer: 16 << 10})
		c, s, cs, ss, cg, sg := contractPair(t, e, client, server, addr)
		if !c.Active() || s.Active() {
			t.Errorf("Active: client %v server %v", c.Active(), s.Active())
		}
		if c.RemoteAddr() != s.LocalAddr() || c.LocalAddr() != s.RemoteAddr() || s.LocalAddr().Addr().String() != addr {
			t.Errorf("addresses: %v->%v, %v->%v", c.LocalAddr(), c.RemoteAddr(), s.LocalAddr(), s.RemoteAddr())
		}
		const n = 8 << 20
		up, down := streamtest.Pattern(3, n), streamtest.Pattern(4, n)
		fc := guardedFeeder(c, cg, up, 5, 100000, true)
		fs := guardedFeeder(s, sg, down, 6, 100000, true)
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
			t.Log("the send buffer never filled")
		}
		if c.Buffered() != 0 || s.Buffered() != 0 {
			t.Errorf("Buffered = %d, %d after the end", c.Buffered(), s.Buffered())
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

func TestContractAbort(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg contractTarget, addr string) {
		e := newEndChecks(t)
		streamtest.CheckNoLeak(t)
		client, server, _ := tg.setup(t, stream.TCPConfig{})
		c, s, cs, ss, _, _ := contractPair(t, e, client, server, addr)
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		// Wait for the bytes, so the abort is a reset and not a refusal
		// of unread data.
		waitArrived(t, ss, []byte("hello"))
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

func TestContractHalfClose(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg contractTarget, addr string) {
		e := newEndChecks(t)
		streamtest.CheckNoLeak(t)
		client, server, _ := tg.setup(t, stream.TCPConfig{SendBuffer: 256 << 10})
		c, s, cs, ss, cg, sg := contractPair(t, e, client, server, addr)
		// The client sends a request and closes; the server gets every
		// byte, then EOF.
		req := streamtest.Pattern(7, 1<<20)
		fc := guardedFeeder(c, cg, req, 8, 50000, true)
		go fc.Pump()
		streamtest.WaitFeeder(t, "client", fc)
		ss.Wait(t, "server")
		streamtest.CheckDelivered(t, "server", ss, req, io.EOF)
		// The server keeps sending after the client's FIN: the client
		// still receives all of it, then the server's FIN.
		resp := streamtest.Pattern(9, 3<<20)
		fs := guardedFeeder(s, sg, resp, 10, 70000, true)
		go fs.Pump()
		streamtest.WaitFeeder(t, "server", fs)
		cs.Wait(t, "client")
		streamtest.CheckDelivered(t, "client", cs, resp, io.EOF)
	})
}

func TestContractLinger(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg contractTarget, addr string) {
		e := newEndChecks(t)
		streamtest.CheckNoLeak(t)
		client, server, _ := tg.setup(t, stream.TCPConfig{Linger: 200 * time.Millisecond})
		c, s, cs, ss, _, _ := contractPair(t, e, client, server, addr)
		c.Write([]byte("request"))
		c.Close()
		ss.Wait(t, "server")
		streamtest.CheckDelivered(t, "server", ss, []byte("request"), io.EOF)
		// The server answers after the client's FIN but never closes: the
		// client receives the answer, then its linger runs out.
		if _, err := s.Write([]byte("response")); err != nil {
			t.Fatal(err)
		}
		cs.Wait(t, "client")
		streamtest.CheckDelivered(t, "client", cs, []byte("response"), stream.ErrTimeout)
		s.Abort()
	})
}

func TestContractDialErrors(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg contractTarget, addr string) {
		streamtest.CheckNoLeak(t)
		client, server, _ := tg.setup(t, stream.TCPConfig{DialTimeout: 5 * time.Second})
		// A port nobody listens on: listen, note the port, close.
		l, err := server.Listen(netip.AddrPortFrom(netip.MustParseAddr(addr), 0))
		if err != nil {
			t.Fatal(err)
		}
		at := l.Addr()
		if at.Port() == 0 || at.Addr().String() != addr {
			t.Errorf("Addr = %v", at)
		}
		if l2, err := server.Listen(at); !errors.Is(err, stream.ErrAddrInUse) {
			t.Errorf("second Listen: %v, want ErrAddrInUse", err)
			if err == nil {
				l2.Close()
			}
		}
		if err := l.Close(); err != nil {
			t.Errorf("listener Close: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second listener Close: %v", err)
		}
		done := make(chan error, 2)
		client.Dial(netip.Addr{}, at, func(c stream.Conn, err error) { done <- err })
		if err := <-done; !errors.Is(err, stream.ErrRefused) {
			t.Errorf("Dial: %v, want ErrRefused", err)
		}
		// Cancel at once: done says ErrCanceled (or, if the refusal won
		// the race, ErrRefused), exactly once.
		cancel := client.Dial(netip.Addr{}, at, func(c stream.Conn, err error) { done <- err })
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
		// The port is free again after Close.
		l3, err := server.Listen(at)
		if err != nil {
			t.Errorf("Listen after Close: %v", err)
		} else {
			l3.Close()
		}
	})
}

// TestContractDialTimeoutAndCancel needs a peer that drops everything:
// netstack only (loopback never loses a SYN).
func TestContractDialTimeoutAndCancel(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg contractTarget, addr string) {
		streamtest.CheckNoLeak(t)
		client, server, blackhole := tg.setup(t, stream.TCPConfig{DialTimeout: 300 * time.Millisecond})
		if blackhole == nil {
			t.Skip("this target cannot drop packets")
		}
		l, err := server.Listen(netip.AddrPortFrom(netip.MustParseAddr(addr), 0))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		l.SetAcceptor(func(c stream.Conn) {
			t.Error("a connection was accepted through a dead wire")
			c.Abort()
		})
		blackhole(true)
		done := make(chan error, 2)
		start := time.Now()
		client.Dial(netip.Addr{}, l.Addr(), func(c stream.Conn, err error) { done <- err })
		if err := <-done; !errors.Is(err, stream.ErrTimeout) {
			t.Errorf("Dial through a dead wire: %v, want ErrTimeout", err)
		}
		if d := time.Since(start); d < 300*time.Millisecond {
			t.Errorf("timed out after %v, before the 300ms dial timeout", d)
		}
		// A dial that cannot complete, canceled: ErrCanceled, once.
		cancel := client.Dial(netip.Addr{}, l.Addr(), func(c stream.Conn, err error) { done <- err })
		cancel()
		if err := <-done; !errors.Is(err, stream.ErrCanceled) {
			t.Errorf("canceled Dial: %v, want ErrCanceled", err)
		}
		cancel()
		select {
		case err := <-done:
			t.Errorf("done called twice (%v)", err)
		case <-time.After(50 * time.Millisecond):
		}
		// Healed, the wire works again.
		blackhole(false)
		accepted := make(chan stream.Conn, 1)
		l.SetAcceptor(func(c stream.Conn) { accepted <- c })
		dialed := make(chan error, 1)
		client.Dial(netip.Addr{}, l.Addr(), func(c stream.Conn, err error) {
			if c != nil {
				c.Abort()
			}
			dialed <- err
		})
		if err := <-dialed; err != nil {
			t.Fatalf("Dial after healing: %v", err)
		}
		(<-accepted).Abort()
	})
}

func TestContractBackpressure(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg contractTarget, addr string) {
		e := newEndChecks(t)
		streamtest.CheckNoLeak(t)
		// The server reads nothing (no receiver): the stack's buffers
		// fill, then the client's queue, then Write refuses, without
		// blocking.
		const sendBuffer = 256 << 10
		client, server, _ := tg.setup(t, stream.TCPConfig{SendBuffer: sendBuffer})
		l, err := server.Listen(netip.AddrPortFrom(netip.MustParseAddr(addr), 0))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		accepted := make(chan stream.Conn, 1)
		l.SetAcceptor(func(c stream.Conn) { accepted <- c })
		dialed := make(chan stream.Conn, 1)
		client.Dial(netip.Addr{}, l.Addr(), func(c stream.Conn, err error) {
			if err != nil {
				t.Error(err)
			}
			dialed <- c
		})
		c := <-dialed
		if c == nil {
			return
		}
		s := <-accepted
		writable := make(chan struct{}, 1)
		c.SetWritable(func() { writable <- struct{}{} })
		cs := e.sink("client", streamtest.NewSink(c, nil))
		chunk := make([]byte, 32<<10)
		total := 0
		start := time.Now()
		// Fill until Write refuses and stays refused: a stack may still
		// take queued bytes after the first refusal (its receiver's
		// window opens as its buffer grows), and then calls writable,
		// rightly. Once no writable comes for a while, every buffer on
		// the way is full.
		for refusals := 0; ; refusals++ {
			n, err := fill(c, chunk, start)
			if err != nil {
				t.Fatal(err)
			}
			total += n
			if b := c.Buffered(); b == 0 || b > sendBuffer {
				t.Errorf("Buffered = %d when refusing", b)
			}
			if !cameWithin(writable, 300*time.Millisecond) {
				break
			}
			if time.Since(start) > 20*time.Second {
				t.Fatalf("writable still called after %d refusals: the stack takes bytes nobody reads", refusals)
			}
		}
		t.Logf("refused after %d bytes, %d queued", total, c.Buffered())
		if cameWithin(writable, 100*time.Millisecond) {
			t.Fatal("writable called while nobody reads")
		}
		// Reading on the server drains the client and calls writable.
		ss := e.sink("server", streamtest.NewSink(s, nil))
		if !cameWithin(writable, 10*time.Second) {
			t.Fatal("writable never called")
		}
		c.Close()
		ss.Wait(t, "server")
		if got, _, err := ss.Result(); len(got) != total || err != io.EOF {
			t.Errorf("server got %d bytes (%v), want %d", len(got), err, total)
		}
		s.Close()
		cs.Wait(t, "client")
		streamtest.CheckDelivered(t, "client", cs, nil, io.EOF)
	})
}

// fill writes chunk to c until Write refuses, and says how much it took.
// Write must refuse, not block: filling may not take 10 s.
func fill(c stream.Conn, chunk []byte, start time.Time) (int, error) {
	total := 0
	for {
		_, err := c.Write(chunk)
		if errors.Is(err, stream.ErrWouldBlock) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		total += len(chunk)
		if d := time.Since(start); d > 10*time.Second {
			return total, fmt.Errorf("filling took %v: did Write block, or never refuse?", d)
		}
	}
}

// cameWithin says whether ch delivers within d.
func cameWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func TestContractListenerClose(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg contractTarget, addr string) {
		e := newEndChecks(t)
		streamtest.CheckNoLeak(t)
		client, server, _ := tg.setup(t, stream.TCPConfig{})
		l, err := server.Listen(netip.AddrPortFrom(netip.MustParseAddr(addr), 0))
		if err != nil {
			t.Fatal(err)
		}
		at := l.Addr()
		// No acceptor: the connection completes into the backlog.
		dialed := make(chan stream.Conn, 1)
		client.Dial(netip.Addr{}, at, func(c stream.Conn, err error) {
			if err != nil {
				t.Error(err)
			}
			dialed <- c
		})
		c := <-dialed
		if c == nil {
			l.Close()
			return
		}
		cs := e.sink("client", streamtest.NewSink(c, nil))
		// Closing the listener resets the connection waiting in it.
		l.Close()
		cs.Wait(t, "client")
		streamtest.CheckDelivered(t, "client", cs, nil, stream.ErrReset)
		c.Abort()
		// Nobody listens any more.
		done := make(chan error, 1)
		client.Dial(netip.Addr{}, at, func(c stream.Conn, err error) {
			if c != nil {
				c.Abort()
			}
			done <- err
		})
		if err := <-done; !errors.Is(err, stream.ErrRefused) {
			t.Errorf("Dial after listener Close: %v, want ErrRefused", err)
		}
	})
}

func TestContractAcceptorNil(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg contractTarget, addr string) {
		e := newEndChecks(t)
		streamtest.CheckNoLeak(t)
		client, server, _ := tg.setup(t, stream.TCPConfig{})
		l, err := server.Listen(netip.AddrPortFrom(netip.MustParseAddr(addr), 0))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		l.SetAcceptor(nil) // connections are reset
		dialed := make(chan stream.Conn, 1)
		client.Dial(netip.Addr{}, l.Addr(), func(c stream.Conn, err error) {
			if err != nil && !errors.Is(err, stream.ErrReset) {
				t.Error(err) // ErrReset: the RST beat the connect
			}
			dialed <- c
		})
		c := <-dialed
		if c == nil {
			return
		}
		s := e.sink("client", streamtest.NewSink(c, nil))
		s.Wait(t, "client")
		if _, _, err := s.Result(); !errors.Is(err, stream.ErrReset) {
			t.Errorf("client of a nil acceptor: %v, want ErrReset", err)
		}
		c.Abort()
	})
}

// benchStream measures a one-way stream of 64 KiB writes between client
// and server, as the iWARP engine would write it (respecting backpressure).
func benchStream(b *testing.B, client, server stream.Network, addr string) {
	l, err := server.Listen(netip.AddrPortFrom(netip.MustParseAddr(addr), 0))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	type result struct {
		n   int
		err error
	}
	got := make(chan result, 1)
	l.SetAcceptor(func(c stream.Conn) {
		n := 0
		c.SetReceiver(func(p []byte) { n += len(p) }, func(err error) { got <- result{n, err} })
	})
	dialed := make(chan stream.Conn, 1)
	client.Dial(netip.Addr{}, l.Addr(), func(c stream.Conn, err error) {
		if err != nil {
			b.Error(err)
		}
		dialed <- c
	})
	c := <-dialed
	if c == nil {
		b.FailNow()
	}
	c.SetReceiver(nil, nil)
	writable := make(chan struct{}, 1)
	c.SetWritable(func() {
		select {
		case writable <- struct{}{}:
		default:
		}
	})
	chunk := make([]byte, 64<<10)
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for i := 0; i < b.N; {
		_, err := c.Write(chunk)
		switch {
		case err == nil:
			i++
		case errors.Is(err, stream.ErrWouldBlock):
			<-writable
		default:
			b.Fatal(err)
		}
	}
	c.Close()
	r := <-got
	b.StopTimer()
	if r.err != io.EOF || r.n != b.N*len(chunk) {
		b.Fatalf("server got %d bytes (%v), want %d", r.n, r.err, b.N*len(chunk))
	}
	c.Abort()
}

// BenchmarkNetstackStream is netstack's throughput between two stacks in
// one process; BenchmarkKernelStream is the same over kernel loopback, for
// the ratio.
func BenchmarkNetstackStream(b *testing.B) {
	w := newNSWire(b)
	benchStream(b, netstack.New(w.a, testNIC, stream.TCPConfig{}), netstack.New(w.b, testNIC, stream.TCPConfig{}), nsServerAddrs[0])
}

func BenchmarkKernelStream(b *testing.B) {
	n := &kerneltcp.Network{}
	benchStream(b, n, n, "127.0.0.1")
}
