// End-to-end tests of the embedded-mode link over loopback: frames built by
// roce/wire cross the kernel and come back rebuilt byte for byte, ICRC
// included.

package udp

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
)

// TestExchange sends frames both ways and checks that each arrives as
// exactly the frame that was sent: same headers (so the reconstruction of
// the sender's IP header, which its ICRC covers, is exact), same per-QP
// source port, same payload.
func TestExchange(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(map[bool]string{false: "IPv4", true: "IPv6"}[v6], func(t *testing.T) {
			a, b := openPair(t, v6, nil)
			ca, cb := collect(a, 16), collect(b, 16)
			for i, payload := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte{0xA5}, 1024), bytes.Repeat([]byte{7}, 4096)} {
				for _, dir := range []struct {
					from, to *Endpoint
					c        *collector
				}{{a, b, cb}, {b, a, ca}} {
					sent := roceFrame(dir.from, dir.to, frameOpts{psn: uint32(i), payload: payload})
					if err := dir.from.Send(sent); err != nil {
						t.Fatal(err)
					}
					got := dir.c.next(t)
					f := decode(t, got, dir.to.Port())
					if f.SrcPort() != 0xC123 {
						t.Errorf("source port %#x, want the per-QP 0xC123", f.SrcPort())
					}
					if f.SrcAddr() != dir.from.Addr() || f.DstAddr() != dir.to.Addr() {
						t.Errorf("addresses %v -> %v", f.SrcAddr(), f.DstAddr())
					}
					if !bytes.Equal(f.Packet.Payload(), payload) || f.Packet.BTH().PSN() != uint32(i) {
						t.Errorf("payload or PSN changed")
					}
					if !bytes.Equal(got, sent) {
						t.Errorf("rebuilt frame differs from the one sent\nsent % x\ngot  % x", sent, got)
					}
				}
			}
			for _, ep := range []*Endpoint{a, b} {
				st := ep.Stats()
				if st.Sent != 4 || st.Received != 4 || st.Fallbacks != 0 || st.SendErrors != 0 || st.Truncated != 0 {
					t.Errorf("%v stats %+v", ep.Addr(), st)
				}
			}
		})
	}
}

// TestTOSAndTTL checks that the frame's TOS (traffic class) and TTL (hop
// limit) are put on the wire and that the received values are the ones in
// the rebuilt header.
func TestTOSAndTTL(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(map[bool]string{false: "IPv4", true: "IPv6"}[v6], func(t *testing.T) {
			a, b := openPair(t, v6, nil)
			cb := collect(b, 4)
			for _, c := range []struct{ tos, ttl uint8 }{{0xB9, 7}, {0, 1}, {0x02, 255}, {0xB8, 64}} {
				sent := roceFrame(a, b, frameOpts{tos: c.tos, ttl: c.ttl, payload: []byte("tos")})
				if err := a.Send(sent); err != nil {
					t.Fatal(err)
				}
				f := decode(t, cb.next(t), b.Port())
				e := f.Encap()
				if e.TOS != c.tos || e.TTL != c.ttl {
					t.Errorf("sent TOS %#x TTL %d, received TOS %#x TTL %d", c.tos, c.ttl, e.TOS, e.TTL)
				}
			}
		})
	}
}

// TestBatchDelivery holds the receiver inside its first call while many
// frames queue up in the kernel, so that the next recvmmsg calls must
// return several at once; every frame must arrive exactly once.
func TestBatchDelivery(t *testing.T) {
	const n = 200
	// The default rmem_max (208 KiB), as on a machine that was not tuned:
	// 200 small datagrams still fit.
	a, b := openPair(t, false, func(c *Config) { c.RecvBuffer = 212992 })
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	seen := make(map[uint32]int)
	done := make(chan struct{})
	total := 0
	b.SetReceiver(func([]byte) { t.Error("per-frame receiver called while a batch receiver is set") })
	b.SetBatchReceiver(func(frames [][]byte) {
		mu.Lock()
		first := len(sizes) == 0
		sizes = append(sizes, len(frames))
		for _, fr := range frames {
			var f wire.Frame
			if err := f.Decode(fr, b.Port()); err != nil || !f.VerifyICRC() {
				t.Errorf("bad frame in batch: %v", err)
				continue
			}
			seen[f.Packet.BTH().PSN()]++
		}
		total += len(frames)
		if total == n {
			close(done)
		}
		mu.Unlock()
		if first {
			<-release
		}
	})
	for i := range n {
		if err := a.Send(roceFrame(a, b, frameOpts{psn: uint32(i), payload: []byte("batch")})); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		mu.Lock()
		t.Fatalf("%d of %d frames arrived; stats %+v", total, n, b.Stats())
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		if seen[uint32(i)] != 1 {
			t.Errorf("PSN %d arrived %d times", i, seen[uint32(i)])
		}
	}
	largest := 0
	for _, s := range sizes {
		largest = max(largest, s)
	}
	if largest < 2 {
		t.Errorf("no batch held more than one frame: %v", sizes)
	}
	st := b.Stats()
	if st.Received != n || st.RecvBatches != uint64(len(sizes)) || st.KernelDrops != 0 {
		t.Errorf("stats %+v after %d batches", st, len(sizes))
	}
	t.Logf("%d frames in %d batches, largest %d", n, len(sizes), largest)
}

// TestSendBatch sends frames from several source ports, with a malformed
// frame among them, through sendmmsg.
func TestSendBatch(t *testing.T) {
	a, b := openPair(t, false, func(c *Config) { c.BatchSize = 4 })
	cb := collect(b, 64)
	var frames [][]byte
	for i := range 20 {
		port := uint16(0xC100 + i/3) // runs of three frames per port
		frames = append(frames, roceFrame(a, b, frameOpts{srcPort: port, psn: uint32(i), payload: []byte{byte(i)}}))
	}
	frames = append(frames[:10:10], append([][]byte{{1, 2, 3}}, frames[10:]...)...)
	err := a.SendBatch(frames)
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("SendBatch with a malformed frame: %v", err)
	}
	for i := range 20 {
		f := decode(t, cb.next(t), b.Port())
		if f.Packet.BTH().PSN() != uint32(i) || f.SrcPort() != uint16(0xC100+i/3) {
			t.Errorf("frame %d: PSN %d port %#x", i, f.Packet.BTH().PSN(), f.SrcPort())
		}
	}
	st := a.Stats()
	if st.Sent != 20 || st.Malformed != 1 || st.SendBatches < 7 || st.SendBatches > 10 {
		t.Errorf("stats %+v", st)
	}
}

// TestMalformed checks that frames a socket cannot reproduce are refused,
// counted, and never sent.
func TestMalformed(t *testing.T) {
	a, b := openPair(t, false, nil)
	good := roceFrame(a, b, frameOpts{payload: []byte("ok")})
	mod := func(f func(fr []byte)) []byte {
		c := append([]byte(nil), good...)
		f(c)
		return c
	}
	other, _ := openPair(t, true, nil)
	cases := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, transport.ErrEmptyFrame},
		{"short", good[:10], ErrMalformed},
		{"ARP", mod(func(f []byte) { f[12], f[13] = 0x08, 0x06 }), ErrMalformed},
		{"VLAN", mod(func(f []byte) { f[12], f[13] = 0x81, 0x00 }), ErrUnrepresentable},
		{"TCP", mod(func(f []byte) { f[14+9] = 6 }), ErrMalformed},
		{"IPv4 options", mod(func(f []byte) { f[14] = 0x46 }), ErrUnrepresentable},
		{"bad version", mod(func(f []byte) { f[14] = 0x55 }), ErrMalformed},
		{"DF clear", mod(func(f []byte) { f[14+6] = 0 }), ErrUnrepresentable},
		{"fragment", mod(func(f []byte) { f[14+6] = 0x60 }), ErrUnrepresentable},
		{"IP ID", mod(func(f []byte) { f[14+5] = 1 }), ErrUnrepresentable},
		{"TTL 0", mod(func(f []byte) { f[14+8] = 0 }), ErrUnrepresentable},
		{"foreign source", mod(func(f []byte) { f[14+15]++ }), ErrUnrepresentable},
		{"truncated IP", good[:len(good)-1], ErrMalformed},
		{"UDP length", mod(func(f []byte) { f[34+5]++ }), ErrMalformed},
		{"port 0", mod(func(f []byte) { f[34+2], f[34+3] = 0, 0 }), ErrMalformed},
		{"wrong family", roceFrame(other, other, frameOpts{}), ErrUnrepresentable},
	}
	for _, c := range cases {
		if err := a.Send(c.frame); !errors.Is(err, c.want) {
			t.Errorf("%s: Send returned %v, want %v", c.name, err, c.want)
		}
	}
	st := a.Stats()
	if st.Malformed != uint64(len(cases)) || st.Sent != 0 {
		t.Errorf("stats %+v, want %d malformed and nothing sent", st, len(cases))
	}
	if b.Stats().Received != 0 {
		t.Errorf("a refused frame arrived")
	}
}

// TestClose checks that Close stops the receive loop and closes every
// socket, that a second Close is harmless and that Send then fails.
func TestClose(t *testing.T) {
	before := runtime.NumGoroutine()
	a, b := openPair(t, false, nil)
	cb := collect(b, 4)
	for _, port := range []uint16{0xC001, 0xC002, 0xC003} {
		if err := a.Send(roceFrame(a, b, frameOpts{srcPort: port})); err != nil {
			t.Fatal(err)
		}
		cb.next(t)
	}
	socks := []*sock{a.sys.main}
	for _, ps := range a.sys.ports {
		socks = append(socks, ps.s)
	}
	if n := len(socks) - 1; n != 3 {
		t.Fatalf("%d send sockets, want 3", n)
	}
	for _, ep := range []*Endpoint{a, b} {
		if err := ep.Close(); err != nil {
			t.Fatal(err)
		}
		if err := ep.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
	for _, s := range socks {
		if err := s.rc.Control(func(uintptr) {}); err == nil {
			t.Errorf("socket %s still open", s.f.Name())
		}
	}
	frame := roceFrame(a, b, frameOpts{})
	if err := a.Send(frame); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
	if err := a.SendBatch([][]byte{frame}); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("SendBatch after Close: %v", err)
	}
	// Goroutines end asynchronously only in the runtime's own bookkeeping;
	// give it a moment rather than a fixed sleep.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Close, %d before Open", n, before)
	}
	// The address and port are free again.
	c, err := Open(Config{Addr: b.Addr(), Port: b.Port()})
	if err != nil {
		t.Fatalf("reopening %v: %v", b.Addr(), err)
	}
	c.Close()
}

// TestCloseWhileSending closes an endpoint while goroutines send through
// it: every Send either succeeds or reports ErrClosed (run with -race).
func TestCloseWhileSending(t *testing.T) {
	a, b := openPair(t, false, nil)
	b.SetReceiver(func([]byte) {})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				err := a.Send(roceFrame(a, b, frameOpts{srcPort: uint16(0xC200 + g*8 + i%8)}))
				if errors.Is(err, transport.ErrClosed) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	a.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDuplicateAddress checks that a second endpoint on an address and port
// in use fails to open instead of sharing the traffic.
func TestDuplicateAddress(t *testing.T) {
	a, _ := openPair(t, false, nil)
	if c, err := Open(Config{Addr: a.Addr(), Port: a.Port()}); err == nil {
		c.Close()
		t.Fatal("two endpoints opened on one address and port")
	}
}

// TestFallback occupies a source port with a foreign socket, so that the
// endpoint must send from its main socket; with Config.Reseal the frame
// still verifies at the peer, without it the ICRC is stale.
func TestFallback(t *testing.T) {
	const port = 0xC124
	for _, reseal := range []bool{true, false} {
		t.Run(fmt.Sprintf("reseal=%v", reseal), func(t *testing.T) {
			a, b := openPair(t, false, func(c *Config) {
				if reseal {
					c.Reseal = func(frame []byte) {
						var f wire.Frame
						if err := f.Decode(frame, c.Port); err == nil {
							f.Seal()
						}
					}
				}
			})
			blocker, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(a.Addr(), port)))
			if err != nil {
				t.Skipf("cannot occupy the port: %v", err)
			}
			defer blocker.Close()
			cb := collect(b, 4)
			sent := roceFrame(a, b, frameOpts{srcPort: port, payload: []byte("fallback")})
			orig := append([]byte(nil), sent...)
			for range 2 {
				if err := a.Send(sent); err != nil {
					t.Fatal(err)
				}
				got := cb.next(t)
				var f wire.Frame
				if err := f.Decode(got, b.Port()); err != nil {
					t.Fatal(err)
				}
				if f.SrcPort() != a.Port() {
					t.Errorf("source port %#x, want the main socket's %#x", f.SrcPort(), a.Port())
				}
				if f.VerifyICRC() != reseal {
					t.Errorf("ICRC verifies: %v", f.VerifyICRC())
				}
			}
			if !bytes.Equal(sent, orig) {
				t.Error("Send modified the caller's frame")
			}
			if st := a.Stats(); st.Fallbacks != 2 || st.Sent != 2 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestTeeCapture wraps both endpoints in pcap tees: every frame in the
// captures, the ones the engines sent and the ones rebuilt on receipt,
// decodes and verifies.
func TestTeeCapture(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(map[bool]string{false: "IPv4", true: "IPv6"}[v6], func(t *testing.T) {
			a, b := openPair(t, v6, nil)
			var bufA, bufB bytes.Buffer
			wA, err := pcap.NewWriter(&bufA)
			if err != nil {
				t.Fatal(err)
			}
			wB, _ := pcap.NewWriter(&bufB)
			ta, tb := pcap.Tee(a, wA, time.Now), pcap.Tee(b, wB, time.Now)
			got := make(chan struct{}, 64)
			ta.SetReceiver(func([]byte) { got <- struct{}{} })
			tb.SetReceiver(func([]byte) { got <- struct{}{} })
			const n = 10
			for i := range n {
				if err := ta.Send(roceFrame(a, b, frameOpts{psn: uint32(i), payload: []byte{byte(i)}, tos: 0x60})); err != nil {
					t.Fatal(err)
				}
				if err := tb.Send(roceFrame(b, a, frameOpts{srcPort: 0xC777, psn: uint32(i)})); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 * n {
				select {
				case <-got:
				case <-time.After(5 * time.Second):
					t.Fatal("frames missing")
				}
			}
			for name, c := range map[string]struct {
				w   *pcap.Writer
				buf *bytes.Buffer
				ep  *Endpoint
			}{"a": {wA, &bufA, a}, "b": {wB, &bufB, b}} {
				if err := c.w.Close(); err != nil {
					t.Fatal(err)
				}
				frames, err := pcap.ReadFrom(c.buf)
				if err != nil {
					t.Fatal(err)
				}
				if len(frames) != 2*n {
					t.Errorf("capture %s: %d frames, want %d", name, len(frames), 2*n)
				}
				for _, fr := range frames {
					port := a.Port()
					var f wire.Frame
					if f.Decode(fr.Data, port) != nil {
						port = b.Port()
					}
					decode(t, fr.Data, port)
				}
			}
		})
	}
}

// TestTruncatedAndDiscarded checks the receive-side drops: a datagram
// longer than MaxDatagram, and arrivals while no receiver is installed.
func TestTruncatedAndDiscarded(t *testing.T) {
	a, b := openPair(t, false, func(c *Config) { c.MaxDatagram = 100 })
	b.SetReceiver(nil)
	if err := a.Send(roceFrame(a, b, frameOpts{payload: []byte("nobody listens")})); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.Stats().Discarded == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cb := collect(b, 4)
	for _, size := range []int{200, 20} {
		if err := a.Send(roceFrame(a, b, frameOpts{payload: make([]byte, size)})); err != nil {
			t.Fatal(err)
		}
	}
	f := decode(t, cb.next(t), b.Port())
	if n := len(f.Packet.Payload()); n != 20 {
		t.Errorf("the frame that arrived has %d payload bytes, want the 20-byte one", n)
	}
	if st := b.Stats(); st.Truncated != 1 || st.Discarded != 1 || st.Received != 1 {
		t.Errorf("stats %+v", st)
	}
}
