// Test helpers for the netstack Conn: two gVisor stacks back to back (a
// wire of two channel endpoints and a pump goroutine each way, which can be
// told to drop everything), and the contract targets the shared tests run
// against: kernel TCP on loopback (the reference) and netstack.

package netstack_test

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/kerneltcp"
	"github.com/rnic/rnic/transport/stream/netstack"
	"github.com/rnic/rnic/transport/stream/streamtest"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

const testNIC tcpip.NICID = 1

// The two stacks' addresses: the client's (A) and the server's (B).
var (
	nsClientPrefixes = []netip.Prefix{netip.MustParsePrefix("10.99.0.1/24"), netip.MustParsePrefix("fd00:99::1/64")}
	nsServerPrefixes = []netip.Prefix{netip.MustParsePrefix("10.99.0.2/24"), netip.MustParsePrefix("fd00:99::2/64")}
	nsServerAddrs    = []string{"10.99.0.2", "fd00:99::2"}
)

// nsWire is two stacks linked back to back.
type nsWire struct {
	a, b        *stack.Stack
	epA         *channel.Endpoint
	drop        atomic.Bool                                  // the wire loses every packet
	supers      atomic.Int64                                 // super-segments the pump cut (into more than one segment)
	superPieces atomic.Int64                                 // the segments they were cut into
	superWatch  atomic.Pointer[func(pkt []byte, mss int)]    // sees every super-segment before its cut
	watch       atomic.Pointer[func(fromA bool, pkt []byte)] // sees every packet sent, before the drop
}

// newTestStack builds a stack like tap.TCPStack's: IPv4, IPv6 (no DAD, no
// RS), TCP with SACK, Nagle off and 4 MiB buffers, one NIC on ep.
func newTestStack(t testing.TB, ep stack.LinkEndpoint, prefixes []netip.Prefix) *stack.Stack {
	return newTestStackBuf(t, ep, prefixes, 4<<20)
}

// newTestStackBuf is newTestStack with TCP send buffers of sendBuf bytes.
func newTestStackBuf(t testing.TB, ep stack.LinkEndpoint, prefixes []netip.Prefix, sendBuf int) *stack.Stack {
	t.Helper()
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	for _, o := range []tcpip.SettableTransportProtocolOption{
		new(tcpip.TCPSACKEnabled(true)),
		new(tcpip.TCPDelayEnabled(false)),
		new(tcpip.TCPModerateReceiveBufferOption(true)),
		&tcpip.TCPSendBufferSizeRangeOption{Min: 4096, Default: sendBuf, Max: max(sendBuf, 4<<20)},
		&tcpip.TCPReceiveBufferSizeRangeOption{Min: 4096, Default: 4 << 20, Max: 4 << 20},
	} {
		if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, o); err != nil {
			t.Fatalf("option %T: %s", o, err)
		}
	}
	if err := s.CreateNIC(testNIC, ep); err != nil {
		t.Fatalf("CreateNIC: %s", err)
	}
	var routes []tcpip.Route
	for _, p := range prefixes {
		proto := ipv6.ProtocolNumber
		if p.Addr().Is4() {
			proto = ipv4.ProtocolNumber
		}
		pa := tcpip.ProtocolAddress{Protocol: proto, AddressWithPrefix: tcpip.AddressWithPrefix{
			Address: tcpip.AddrFromSlice(p.Addr().AsSlice()), PrefixLen: p.Bits()}}
		if err := s.AddProtocolAddress(testNIC, pa, stack.AddressProperties{}); err != nil {
			t.Fatalf("AddProtocolAddress %v: %s", p, err)
		}
		routes = append(routes, tcpip.Route{Destination: pa.AddressWithPrefix.Subnet(), NIC: testNIC})
	}
	s.SetRouteTable(routes)
	return s
}

// newNSWire builds the two stacks and the pumps; everything is torn down
// in t.Cleanup.
func newNSWire(t testing.TB) *nsWire {
	t.Helper()
	return newNSWireBuf(t, 4<<20)
}

// newNSWireBuf is newNSWire with the client's TCP send buffer sendBuf
// bytes.
func newNSWireBuf(t testing.TB, sendBuf int) *nsWire {
	t.Helper()
	return newNSWireGSO(t, sendBuf, false)
}

// newNSWireGSO is newNSWireBuf whose client NIC offers segmentation
// offload when gso is set, as a TAP with --tap-offload does: the client's
// TCP then hands the NIC super-segments (stack.HostGSOSupported, up to the
// channel endpoint's 32 KiB), which the pump cuts into segments of the
// MSS before the wire, as the kernel does behind a TAP (streamtest.CutSuperSegment).
func newNSWireGSO(t testing.TB, sendBuf int, gso bool) *nsWire {
	t.Helper()
	// Queues deep enough for a 4 MiB window of 1500-byte packets; a full
	// queue drops, as a wire would.
	epA, epB := channel.New(8192, 1500, ""), channel.New(8192, 1500, "")
	if gso {
		epA.SupportedGSOKind = stack.HostGSOSupported
	}
	w := &nsWire{a: newTestStackBuf(t, epA, nsClientPrefixes, sendBuf), b: newTestStack(t, epB, nsServerPrefixes), epA: epA}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go w.pump(ctx, &wg, epA, epB)
	go w.pump(ctx, &wg, epB, epA)
	t.Cleanup(func() {
		w.a.Close()
		w.b.Close()
		cancel()
		wg.Wait()
		w.a.Wait()
		w.b.Wait()
	})
	return w
}

// pump moves packets sent by from to the stack of to, as a new inbound
// packet buffer (a copy, as a wire makes).
func (w *nsWire) pump(ctx context.Context, wg *sync.WaitGroup, from, to *channel.Endpoint) {
	defer wg.Done()
	for {
		pkt := from.ReadContext(ctx)
		if pkt == nil {
			return
		}
		v := pkt.ToView()
		segs := [][]byte{v.AsSlice()}
		if g := pkt.GSOOptions; g.Type == stack.GSOTCPv4 || g.Type == stack.GSOTCPv6 {
			if f := w.superWatch.Load(); f != nil {
				(*f)(v.AsSlice(), int(g.MSS))
			}
			segs, _ = streamtest.CutSuperSegment(v.AsSlice(), int(g.MSS))
			if len(segs) > 1 {
				w.supers.Add(1)
				w.superPieces.Add(int64(len(segs)))
			}
		}
		for _, seg := range segs {
			w.deliver(from == w.epA, seg, to)
		}
		v.Release()
		pkt.DecRef()
	}
}

// deliver shows one packet to the watcher and, unless the wire drops
// everything, injects a copy into to.
func (w *nsWire) deliver(fromA bool, b []byte, to *channel.Endpoint) {
	if f := w.watch.Load(); f != nil {
		(*f)(fromA, b)
	}
	if w.drop.Load() {
		return
	}
	proto := header.IPv4ProtocolNumber
	if header.IPVersion(b) == header.IPv6Version {
		proto = header.IPv6ProtocolNumber
	}
	in := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	to.InjectInbound(proto, in)
	in.DecRef()
}

// contractTarget is one implementation the shared contract tests run
// against.
type contractTarget struct {
	name  string
	addrs []string // the server's address in each family
	// setup returns the client's and the server's Network, and a switch
	// that makes the wire drop everything (nil when it cannot).
	setup func(t *testing.T, cfg stream.TCPConfig) (client, server stream.Network, blackhole func(bool))
}

var contractTargets = []contractTarget{
	{
		name:  "kernel",
		addrs: streamtest.Loopbacks,
		setup: func(t *testing.T, cfg stream.TCPConfig) (stream.Network, stream.Network, func(bool)) {
			n := &kerneltcp.Network{Config: cfg}
			return n, n, nil
		},
	},
	{
		name:  "netstack",
		addrs: nsServerAddrs,
		setup: func(t *testing.T, cfg stream.TCPConfig) (stream.Network, stream.Network, func(bool)) {
			w := newNSWire(t)
			return netstack.New(w.a, testNIC, cfg), netstack.New(w.b, testNIC, cfg), w.drop.Store
		},
	},
}

// forEachTarget runs f for every target and every server address.
func forEachTarget(t *testing.T, f func(t *testing.T, tg contractTarget, addr string)) {
	for _, tg := range contractTargets {
		for _, addr := range tg.addrs {
			t.Run(tg.name+"/"+addr, func(t *testing.T) { f(t, tg, addr) })
		}
	}
}

// callGuard detects callbacks of one Conn running at the same time.
type callGuard struct {
	in       atomic.Int32
	overlaps atomic.Int32
}

func (g *callGuard) enter() {
	if g.in.Add(1) != 1 {
		g.overlaps.Add(1)
	}
}

func (g *callGuard) exit() { g.in.Add(-1) }

// guardedSink is newSink with every callback passing through g.
func guardedSink(c stream.Conn, g *callGuard) *streamtest.Sink {
	s := &streamtest.Sink{Closed: make(chan struct{})}
	c.SetReceiver(func(p []byte) {
		g.enter()
		defer g.exit()
		s.OnData(p)
	}, func(err error) {
		g.enter()
		defer g.exit()
		s.OnClose(err)
	})
	return s
}

// guardedFeeder is newFeeder whose writable callback passes through g.
func guardedFeeder(c stream.Conn, g *callGuard, data []byte, seed uint64, maxWrite int, close bool) *streamtest.Feeder {
	f := streamtest.NewFeeder(c, data, seed, maxWrite, close)
	c.SetWritable(func() {
		g.enter()
		defer g.exit()
		f.Pump()
	})
	return f
}

// endChecks verifies, once every goroutine of the test has ended (so no
// callback can come any more), that each sink's onClose ran exactly once
// and no guard saw overlapping callbacks. Call it before checkNoLeak: its
// cleanup then runs after checkNoLeak's wait.
type endChecks struct {
	mu     sync.Mutex
	sinks  map[string]*streamtest.Sink
	guards map[string]*callGuard
}

func newEndChecks(t *testing.T) *endChecks {
	e := &endChecks{sinks: map[string]*streamtest.Sink{}, guards: map[string]*callGuard{}}
	t.Cleanup(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		for name, s := range e.sinks {
			if _, closes, _ := s.Result(); closes != 1 {
				t.Errorf("%s: onClose ran %d times, want 1", name, closes)
			}
		}
		for name, g := range e.guards {
			if n := g.overlaps.Load(); n != 0 {
				t.Errorf("%s: callbacks ran concurrently %d times", name, n)
			}
		}
	})
	return e
}

func (e *endChecks) sink(name string, s *streamtest.Sink) *streamtest.Sink {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sinks[name] = s
	return s
}

func (e *endChecks) guard(name string) *callGuard {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := &callGuard{}
	e.guards[name] = g
	return g
}
