// Tests of TCPStack on two stacks back to back (no root, no TAP): what
// one Output sends, a goroutine Delivers to the other, as the Host would
// after Ethernet. IPv4 and IPv6: megabytes both ways through gonet, every
// packet on the wire a valid IP packet with a correct TCP checksum
// (checked here, independently of gVisor), a corrupted packet dropped and
// recovered by retransmission, refusal, non-TCP dropped, Close.

package tap

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/stream"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

var (
	nsAPrefixes = []netip.Prefix{netip.MustParsePrefix("10.98.0.1/24"), netip.MustParsePrefix("fd00:98::1/64")}
	nsBPrefixes = []netip.Prefix{netip.MustParsePrefix("10.98.0.2/24"), netip.MustParsePrefix("fd00:98::2/64")}
	nsFamilies  = []struct{ name, a, b string }{{"IPv4", "10.98.0.1", "10.98.0.2"}, {"IPv6", "fd00:98::1", "fd00:98::2"}}
)

// nsWire carries one direction: Output copies each packet into a channel, a
// goroutine Delivers it to the other stack (never synchronously).
type nsWire struct {
	ch      chan []byte
	to      atomic.Pointer[TCPStack]
	checked atomic.Int64           // packets verified
	bad     atomic.Int64           // packets that failed verification
	badWhy  atomic.Pointer[string] // the first failure
	tamper  atomic.Pointer[func(p []byte) bool]
}

func newNSWire() *nsWire { return &nsWire{ch: make(chan []byte, 8192)} }

// output is a TCPStackConfig.Output.
func (w *nsWire) output(p []byte) error {
	if why := nsVerifyTCPPacket(p); why != "" {
		if w.bad.Add(1) == 1 {
			w.badWhy.Store(&why)
		}
	}
	w.checked.Add(1)
	q := append([]byte(nil), p...)
	if f := w.tamper.Load(); f != nil && (*f)(q) {
		w.tamper.Store(nil)
	}
	select {
	case w.ch <- q:
		return nil
	default:
		return errors.New("wire queue full") // lost, as on a wire
	}
}

func (w *nsWire) run(done <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case p := <-w.ch:
			w.to.Load().Deliver(p)
		case <-done:
			return
		}
	}
}

// nsStackPair is two TCPStacks, A and B, linked back to back.
type nsStackPair struct {
	a, b     *TCPStack
	ab, ba   *nsWire
	shutdown func()
}

func newNSStackPair(t testing.TB) *nsStackPair {
	t.Helper()
	p := &nsStackPair{ab: newNSWire(), ba: newNSWire()}
	var err error
	if p.a, err = NewTCPStack(TCPStackConfig{Prefixes: nsAPrefixes, Output: p.ab.output}); err != nil {
		t.Fatal(err)
	}
	if p.b, err = NewTCPStack(TCPStackConfig{Prefixes: nsBPrefixes, Output: p.ba.output}); err != nil {
		p.a.Close()
		t.Fatal(err)
	}
	p.ab.to.Store(p.b)
	p.ba.to.Store(p.a)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go p.ab.run(done, &wg)
	go p.ba.run(done, &wg)
	var once sync.Once
	p.shutdown = func() {
		once.Do(func() {
			p.a.Close()
			p.b.Close()
			close(done)
			wg.Wait()
		})
	}
	t.Cleanup(p.shutdown)
	t.Cleanup(func() {
		for name, w := range map[string]*nsWire{"A->B": p.ab, "B->A": p.ba} {
			if n := w.bad.Load(); n != 0 {
				t.Errorf("%s: %d of %d packets invalid; first: %s", name, n, w.checked.Load(), *w.badWhy.Load())
			}
		}
	})
	return p
}

// nsCheckGoroutines fails the test if goroutines started during it outlive
// it (waiting a little for those that are ending).
func nsCheckGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutine leak: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// nsVerifyTCPPacket checks an IPv4/IPv6 packet carrying TCP with its own
// arithmetic (RFC 791 header checksum, RFC 793/8200 pseudo-header
// checksum) and returns why it is wrong, or "".
func nsVerifyTCPPacket(p []byte) string {
	if len(p) == 0 {
		return "empty"
	}
	var (
		pseudo  []byte
		segment []byte
	)
	switch p[0] >> 4 {
	case 4:
		if len(p) < 20 {
			return "short IPv4"
		}
		ihl := int(p[0]&0xf) * 4
		total := int(binary.BigEndian.Uint16(p[2:]))
		if ihl < 20 || total < ihl || total != len(p) {
			return "bad IPv4 lengths"
		}
		if nsChecksum(p[:ihl], 0) != 0xffff {
			return "bad IPv4 header checksum"
		}
		if p[9] != 6 {
			return "IPv4 not TCP"
		}
		segment = p[ihl:total]
		pseudo = append(append(append([]byte{}, p[12:20]...), 0, 6), byte(len(segment)>>8), byte(len(segment)))
	case 6:
		if len(p) < 40 {
			return "short IPv6"
		}
		if int(binary.BigEndian.Uint16(p[4:]))+40 != len(p) {
			return "bad IPv6 payload length"
		}
		if p[6] != 6 {
			return "IPv6 next header not TCP"
		}
		segment = p[40:]
		pseudo = append(append([]byte{}, p[8:40]...), 0, 0, byte(len(segment)>>8), byte(len(segment)), 0, 0, 0, 6)
	default:
		return "not IP"
	}
	if len(segment) < 20 || int(segment[12]>>4)*4 < 20 || int(segment[12]>>4)*4 > len(segment) {
		return "bad TCP header"
	}
	if nsChecksum(segment, nsOnesSum(pseudo, 0)) != 0xffff {
		return "bad TCP checksum"
	}
	return ""
}

// nsOnesSum adds b as 16-bit big-endian words into a 32-bit accumulator.
func nsOnesSum(b []byte, acc uint32) uint32 {
	for len(b) >= 2 {
		acc += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint32(b[0]) << 8
	}
	return acc
}

// nsChecksum folds the ones' complement sum of b (plus acc) to 16 bits; a
// block with a correct checksum folds to 0xffff.
func nsChecksum(b []byte, acc uint32) uint16 {
	acc = nsOnesSum(b, acc)
	for acc > 0xffff {
		acc = acc>>16 + acc&0xffff
	}
	return uint16(acc)
}

// nsTCPPayload returns the offset and length of the TCP payload of a packet
// verified by nsVerifyTCPPacket.
func nsTCPPayload(p []byte) (off, n int) {
	ip := 40
	if p[0]>>4 == 4 {
		ip = int(p[0]&0xf) * 4
	}
	off = ip + int(p[ip+12]>>4)*4
	return off, len(p) - off
}

func TestTCPStackExchange(t *testing.T) {
	nsCheckGoroutines(t)
	p := newNSStackPair(t)
	for _, fam := range nsFamilies {
		t.Run(fam.name, func(t *testing.T) {
			l, err := p.b.Listen(netip.AddrPortFrom(netip.MustParseAddr(fam.b), 0))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			const n = 8 << 20
			up, down := nsPattern(1, n), nsPattern(2, n)
			serverGot := make(chan nsExchangeResult, 1)
			go func() {
				c, err := l.Accept()
				if err != nil {
					serverGot <- nsExchangeResult{nil, err}
					return
				}
				defer c.Close()
				serverGot <- nsExchange(c, down)
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := p.a.Dial(ctx, netip.MustParseAddr(fam.a), l.Addr().(*net.TCPAddr).AddrPort())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.LocalAddr().(*net.TCPAddr).AddrPort().Addr().String(); got != fam.a {
				t.Errorf("local address %s, want %s", got, fam.a)
			}
			cr := nsExchange(c, up)
			sr := <-serverGot
			if cr.err != nil || sr.err != nil {
				t.Fatalf("client %v, server %v", cr.err, sr.err)
			}
			if !bytes.Equal(sr.got, up) || !bytes.Equal(cr.got, down) {
				t.Errorf("server got %d bytes (equal %v), client got %d (equal %v)",
					len(sr.got), bytes.Equal(sr.got, up), len(cr.got), bytes.Equal(cr.got, down))
			}
		})
	}
	if p.ab.checked.Load() == 0 || p.ba.checked.Load() == 0 {
		t.Error("no packet was checked")
	}
	t.Logf("checked %d + %d packets; A stats %+v, B stats %+v", p.ab.checked.Load(), p.ba.checked.Load(), p.a.Stats(), p.b.Stats())
}

func nsPattern(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

type nsExchangeResult struct {
	got []byte
	err error
}

// nsExchange writes data (then half-closes) while reading everything the
// peer sends until EOF.
func nsExchange(c net.Conn, data []byte) (r nsExchangeResult) {
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.(interface{ CloseWrite() error }).CloseWrite()
		}
		werr <- err
	}()
	r.got, r.err = io.ReadAll(c)
	if err := <-werr; r.err == nil {
		r.err = err
	}
	return r
}

func TestTCPStackCorruptedChecksum(t *testing.T) {
	nsCheckGoroutines(t)
	p := newNSStackPair(t)
	for _, fam := range nsFamilies {
		t.Run(fam.name, func(t *testing.T) {
			l, err := p.b.Listen(netip.AddrPortFrom(netip.MustParseAddr(fam.b), 0))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			got := make(chan []byte, 1)
			go func() {
				c, err := l.Accept()
				if err != nil {
					got <- nil
					return
				}
				defer c.Close()
				b, _ := io.ReadAll(c)
				got <- b
			}()
			c, err := p.a.Dial(t.Context(), netip.Addr{}, l.Addr().(*net.TCPAddr).AddrPort())
			if err != nil {
				t.Fatal(err)
			}
			// Flip a payload bit of the first data packet on the wire: its
			// checksum no longer matches.
			corrupted := make(chan struct{})
			tamper := func(q []byte) bool {
				off, n := nsTCPPayload(q)
				if n == 0 {
					return false
				}
				q[off] ^= 0x40
				close(corrupted)
				return true
			}
			before := p.b.Stack().Stats().TCP.ChecksumErrors.Value()
			p.ab.tamper.Store(&tamper)
			msg := []byte("a message that arrives intact, by retransmission")
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
			c.Close()
			<-corrupted
			select {
			case b := <-got:
				if !bytes.Equal(b, msg) {
					t.Errorf("received %q, want %q", b, msg)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the message never arrived")
			}
			if after := p.b.Stack().Stats().TCP.ChecksumErrors.Value(); after != before+1 {
				t.Errorf("checksum errors %d -> %d, want one more", before, after)
			}
		})
	}
}

func TestTCPStackRefusedAndDrops(t *testing.T) {
	nsCheckGoroutines(t)
	p := newNSStackPair(t)
	for _, fam := range nsFamilies {
		t.Run(fam.name, func(t *testing.T) {
			// A port nobody listens on.
			_, err := p.a.Dial(t.Context(), netip.Addr{}, netip.AddrPortFrom(netip.MustParseAddr(fam.b), 9))
			if !errors.Is(err, stream.ErrRefused) {
				t.Errorf("Dial to a closed port: %v, want ErrRefused", err)
			}
			// Listening twice on one address.
			l, err := p.b.Listen(netip.AddrPortFrom(netip.MustParseAddr(fam.b), 0))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.b.Listen(l.Addr().(*net.TCPAddr).AddrPort()); !errors.Is(err, stream.ErrAddrInUse) {
				t.Errorf("second Listen: %v, want ErrAddrInUse", err)
			}
			// Close unblocks Accept.
			accepted := make(chan error, 1)
			go func() {
				_, err := l.Accept()
				accepted <- err
			}()
			l.Close()
			select {
			case err := <-accepted:
				if err == nil {
					t.Error("Accept after Close succeeded")
				}
			case <-time.After(10 * time.Second):
				t.Error("Accept still blocked after Close")
			}
			// A canceled context ends a dial.
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if _, err := p.a.Dial(ctx, netip.Addr{}, netip.AddrPortFrom(netip.MustParseAddr(fam.b), 9)); !errors.Is(err, stream.ErrCanceled) && !errors.Is(err, stream.ErrRefused) {
				t.Errorf("Dial with a canceled context: %v", err)
			}
		})
	}
	// Non-TCP is dropped before netstack sees it: an ICMP echo request
	// gets no reply (the Host answers pings).
	echo := []byte{0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 1, 0, 0, 10, 98, 0, 2, 10, 98, 0, 1, 8, 0, 0xf7, 0xff, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(echo[10:], ^nsChecksum(echo[:20], 0))
	sentBefore := p.ab.checked.Load()
	for _, junk := range [][]byte{echo, nil, {0x45}, {0x60, 0, 0, 0}, {0x10, 2, 3}} {
		p.a.Deliver(junk)
	}
	if got := p.a.Stats().DroppedNotTCP; got != 5 {
		t.Errorf("DroppedNotTCP = %d, want 5", got)
	}
	if p.ab.checked.Load() != sentBefore {
		t.Error("the stack sent something in answer to non-TCP packets")
	}
}

func TestTCPStackStreams(t *testing.T) {
	nsCheckGoroutines(t)
	p := newNSStackPair(t)
	for _, fam := range nsFamilies {
		t.Run(fam.name, func(t *testing.T) {
			l, err := p.b.Streams(stream.TCPConfig{}).Listen(netip.AddrPortFrom(netip.MustParseAddr(fam.b), 0))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			got := make(chan []byte, 1)
			l.SetAcceptor(func(c stream.Conn) {
				var b []byte
				c.SetReceiver(func(p []byte) { b = append(b, p...) }, func(err error) {
					if err != io.EOF {
						t.Errorf("server onClose(%v)", err)
					}
					got <- b
					c.Close()
				})
			})
			dialed := make(chan stream.Conn, 1)
			p.a.Streams(stream.TCPConfig{}).Dial(netip.Addr{}, l.Addr(), func(c stream.Conn, err error) {
				if err != nil {
					t.Error(err)
				}
				dialed <- c
			})
			c := <-dialed
			if c == nil {
				return
			}
			closed := make(chan error, 1)
			c.SetReceiver(nil, func(err error) { closed <- err })
			msg := nsPattern(3, 300000)
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
			c.Close()
			if b := <-got; !bytes.Equal(b, msg) {
				t.Errorf("server got %d bytes, want %d (equal %v)", len(b), len(msg), bytes.Equal(b, msg))
			}
			if err := <-closed; err != io.EOF {
				t.Errorf("client onClose(%v)", err)
			}
		})
	}
}

func TestTCPStackClose(t *testing.T) {
	nsCheckGoroutines(t)
	p := newNSStackPair(t)
	c, s := nsConnect(t, p)
	// Closing B resets its connection: A's read fails rather than hangs.
	p.b.Close()
	p.b.Close()
	if _, err := io.ReadAll(c); err == nil {
		t.Error("A read EOF, not a reset, after B closed")
	}
	c.Close()
	s.Close()
	p.b.Deliver([]byte{0x45, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 10, 98, 0, 1, 10, 98, 0, 2})
	if got := p.b.Stats().DroppedClosed; got != 1 {
		t.Errorf("DroppedClosed = %d, want 1", got)
	}
	if _, err := p.b.Listen(netip.MustParseAddrPort("10.98.0.2:0")); err == nil {
		t.Error("Listen on a closed stack succeeded")
	}
	p.shutdown()
}

func TestNewTCPStackErrors(t *testing.T) {
	out := func([]byte) error { return nil }
	for _, cfg := range []TCPStackConfig{
		{Prefixes: nsAPrefixes},
		{Output: out},
		{Output: out, Prefixes: []netip.Prefix{{}}},
		{Output: out, Prefixes: nsAPrefixes, MTU: 20},
	} {
		if s, err := NewTCPStack(cfg); err == nil {
			s.Close()
			t.Errorf("NewTCPStack(%+v) succeeded", cfg)
		}
	}
}

func FuzzTCPStackDeliver(f *testing.F) {
	f.Add([]byte{0x45, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 10, 98, 0, 2, 10, 98, 0, 1})
	f.Add(append([]byte{0x60, 0, 0, 0, 0, 20, 6, 64}, make([]byte, 52)...))
	f.Add(append([]byte{0x60, 0, 0, 0, 0, 28, 44, 64}, append(make([]byte, 32), 6, 0, 0, 0, 0, 0, 0, 0)...))
	f.Add([]byte{})
	s, err := NewTCPStack(TCPStackConfig{Prefixes: nsAPrefixes, Output: func([]byte) error { return nil }})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, p []byte) {
		proto, ok := tcpPacketProtocol(p)
		if ok && (len(p) == 0 || (p[0]>>4 == 4) != (proto == 0x0800)) {
			t.Fatalf("classified %x as protocol %#x", p, proto)
		}
		s.Deliver(p) // must not panic, whatever p is
	})
}

// A connection that ended cleanly (FIN both ways, this side in TIME_WAIT)
// gets no RST when the stack closes: the capture of a tool that closed
// its connections before its NIC shows no reset (Wireshark flags one).
func TestTCPStackCloseSilentInTimeWait(t *testing.T) {
	p := newNSStackPair(t)
	c, s := nsConnect(t, p)
	// A closes first (it will sit in TIME_WAIT), then B after A's FIN.
	c.Close()
	if _, err := io.ReadAll(s); err != nil {
		t.Fatalf("B read: %v", err)
	}
	s.Close()
	var rsts atomic.Int64
	rst := nsCountRSTs(&rsts)
	p.ab.tamper.Store(&rst)
	deadline := time.Now().Add(5 * time.Second)
	for !inTimeWait(p.a) {
		if time.Now().After(deadline) {
			t.Fatal("A never reached TIME_WAIT")
		}
		time.Sleep(time.Millisecond)
	}
	p.a.Close()
	if got := p.a.Stats().SilencedRSTs; got != 1 {
		t.Errorf("SilencedRSTs = %d, want 1", got)
	}
	if n := rsts.Load(); n != 0 {
		t.Errorf("%d RSTs left A after its connection ended in TIME_WAIT", n)
	}
}

func inTimeWait(s *TCPStack) bool {
	for _, e := range s.Stack().RegisteredEndpoints() {
		if ep, ok := e.(*tcp.Endpoint); ok && tcp.EndpointState(ep.State()) == tcp.StateTimeWait {
			return true
		}
	}
	return false
}

// Close waits for a FIN in flight: B closes its side after A's FIN (B in
// LAST_ACK) and closes its stack at once; A's last ACK still arrives, and
// B sends no RST.
func TestTCPStackCloseAwaitsLastAck(t *testing.T) {
	p := newNSStackPair(t)
	c, s := nsConnect(t, p)
	var rsts atomic.Int64
	rst := nsCountRSTs(&rsts)
	p.ba.tamper.Store(&rst)
	c.Close()
	if _, err := io.ReadAll(s); err != nil {
		t.Fatalf("B read: %v", err)
	}
	s.Close()   // B's FIN leaves; B is in LAST_ACK until A's ACK
	p.b.Close() // at once
	if n := rsts.Load(); n != 0 {
		t.Errorf("B sent %d RSTs closing a connection in LAST_ACK", n)
	}
}

// nsConnect connects a client on A to a listener on B and returns both
// ends.
func nsConnect(t *testing.T, p *nsStackPair) (c, s net.Conn) {
	t.Helper()
	l, err := p.b.Listen(netip.MustParseAddrPort("10.98.0.2:0"))
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	c, err = p.a.Dial(t.Context(), netip.Addr{}, l.Addr().(*net.TCPAddr).AddrPort())
	if err != nil {
		t.Fatal(err)
	}
	if s = <-accepted; s == nil {
		t.Fatal("nothing accepted")
	}
	return c, s
}

// nsCountRSTs returns a wire tamper function that counts TCP RSTs in n
// and changes nothing.
func nsCountRSTs(n *atomic.Int64) func([]byte) bool {
	return func(q []byte) bool {
		off := 20
		if q[0]>>4 == 6 {
			off = 40
		}
		if len(q) > off+13 && q[off+13]&0x04 != 0 {
			n.Add(1)
		}
		return false
	}
}

// A port can be listened on again, on every address, while a connection
// that ended on it waits in TIME_WAIT on the server's side, as Linux allows
// a SO_REUSEADDR listener: back-to-back rnic pingpong runs through one
// TAP-mode rnicd failed the second with "port is in use".
func TestTCPStackRelistenInTimeWait(t *testing.T) {
	p := newNSStackPair(t)
	l, err := p.b.Listen(netip.AddrPortFrom(netip.Addr{}, 0))
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).AddrPort().Port()
	accepted := make(chan net.Conn, 1)
	go func() {
		s, _ := l.Accept()
		accepted <- s
	}()
	c, err := p.a.Dial(t.Context(), netip.Addr{}, netip.AddrPortFrom(netip.MustParseAddr("10.98.0.2"), port))
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("nothing accepted")
	}
	l.Close()
	s.Close() // the server first: its end goes to TIME_WAIT
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("A read: %v", err)
	}
	c.Close()
	for deadline := time.Now().Add(5 * time.Second); !inTimeWait(p.b); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("B never reached TIME_WAIT")
		}
	}
	again, err := p.b.Listen(netip.AddrPortFrom(netip.Addr{}, port))
	if err != nil {
		t.Fatalf("listen on port %d again while its last connection is in TIME_WAIT: %v", port, err)
	}
	again.Close()
}

// Closing reads the TIME_WAIT endpoints without holding the link's lock:
// netstack holds an endpoint's lock while it answers a segment through
// the link (a FIN retransmitted into TIME_WAIT is answered with an ACK),
// and reading the endpoint under the link's lock hung the close for good.
// The test holds the endpoint's lock as netstack would and checks that
// the link's lock stays free meanwhile.
func TestTCPStackSilenceTimeWaitLockOrder(t *testing.T) {
	p := newNSStackPair(t)
	defer p.shutdown()
	c, s := nsConnect(t, p)
	c.Close()
	if _, err := io.ReadAll(s); err != nil {
		t.Fatalf("B read: %v", err)
	}
	s.Close()
	var ep *tcp.Endpoint
	for deadline := time.Now().Add(5 * time.Second); ep == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("A never reached TIME_WAIT")
		}
		for _, e := range p.a.Stack().RegisteredEndpoints() {
			if te, ok := e.(*tcp.Endpoint); ok && tcp.EndpointState(te.State()) == tcp.StateTimeWait {
				ep = te
			}
		}
	}
	ep.LockUser() // as netstack's processor holds it while it sends
	done := make(chan struct{})
	go func() {
		p.a.link.silenceTimeWait(p.a.Stack().RegisteredEndpoints())
		close(done)
	}()
	time.Sleep(200 * time.Millisecond) // long enough to reach the endpoint
	free := false
	for deadline := time.Now().Add(time.Second); !free && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if p.a.link.mu.TryLock() { // what Output takes
			p.a.link.mu.Unlock()
			free = true
		}
	}
	ep.UnlockUser()
	<-done
	if !free {
		t.Error("the link's lock was held while the close waited for an endpoint's lock: Output would deadlock")
	}
	p.a.link.mu.Lock()
	n := len(p.a.link.silenced)
	p.a.link.mu.Unlock()
	if n != 1 {
		t.Errorf("%d connections silenced, want the one in TIME_WAIT", n)
	}
}
