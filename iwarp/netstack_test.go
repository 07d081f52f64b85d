package iwarp

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/netstack"
	"github.com/rnic/rnic/transport/stream/streamtest"
	"github.com/rnic/rnic/transport/tsharktest"
	gbuffer "gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// nsCapture is two gVisor stacks on one 1500-byte Ethernet (the TAP mode's
// TCP, tap.TCPStack, without the TAP): every IPv4 packet either sends is
// written to a pcap with an Ethernet header and kept for inspection.
type nsCapture struct {
	a, b *stack.Stack
	pcap *pcap.Writer
	mu   sync.Mutex
	pkts [][]byte // IPv4 packets, in the order sent
	cuts int      // of them, segments cut from super-segments
}

var (
	nsAddrA = netip.MustParseAddr("10.98.0.1")
	nsAddrB = netip.MustParseAddr("10.98.0.2")
)

func newNSStack(t *testing.T, ep stack.LinkEndpoint, addr netip.Addr) *stack.Stack {
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	for _, o := range []tcpip.SettableTransportProtocolOption{
		new(tcpip.TCPSACKEnabled(true)),
		new(tcpip.TCPDelayEnabled(false)),
		// No RACK tail loss probes: on a busy test machine a late ACK makes
		// one retransmit a segment, which tshark flags (a warning).
		new(tcpip.TCPRecovery(0)),
		&tcpip.TCPSendBufferSizeRangeOption{Min: 4096, Default: 4 << 20, Max: 4 << 20},
		&tcpip.TCPReceiveBufferSizeRangeOption{Min: 4096, Default: 4 << 20, Max: 4 << 20},
	} {
		if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, o); err != nil {
			t.Fatalf("option %T: %s", o, err)
		}
	}
	if err := s.CreateNIC(1, ep); err != nil {
		t.Fatalf("CreateNIC: %s", err)
	}
	pa := tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: tcpip.AddressWithPrefix{
		Address: tcpip.AddrFromSlice(addr.AsSlice()), PrefixLen: 24}}
	if err := s.AddProtocolAddress(1, pa, stack.AddressProperties{}); err != nil {
		t.Fatalf("AddProtocolAddress: %s", err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: pa.AddressWithPrefix.Subnet(), NIC: 1}})
	return s
}

// newNSCapture links the two stacks; with offload, each NIC takes TCP
// super-segments, which the pump cuts every MSS as the kernel does behind
// a TAP with offload (the capture holds the cut segments).
func newNSCapture(t *testing.T, path string, offload bool) *nsCapture {
	w, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	epA, epB := channel.New(8192, 1500, ""), channel.New(8192, 1500, "")
	if offload {
		epA.SupportedGSOKind, epB.SupportedGSOKind = stack.HostGSOSupported, stack.HostGSOSupported
	}
	c := &nsCapture{a: newNSStack(t, epA, nsAddrA), b: newNSStack(t, epB, nsAddrB), pcap: w}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go c.pump(ctx, &wg, epA, epB, 1)
	go c.pump(ctx, &wg, epB, epA, 2)
	t.Cleanup(func() {
		c.a.Close()
		c.b.Close()
		cancel()
		wg.Wait()
		c.a.Wait()
		c.b.Wait()
	})
	return c
}

func (c *nsCapture) pump(ctx context.Context, wg *sync.WaitGroup, from, to *channel.Endpoint, src byte) {
	defer wg.Done()
	for {
		pkt := from.ReadContext(ctx)
		if pkt == nil {
			return
		}
		v := pkt.ToView()
		segs := [][]byte{bytes.Clone(v.AsSlice())}
		if g := pkt.GSOOptions; g.Type == stack.GSOTCPv4 {
			segs, _ = streamtest.CutSuperSegment(v.AsSlice(), int(g.MSS))
		}
		v.Release()
		pkt.DecRef()
		for _, p := range segs {
			frame := append([]byte{0x02, 0, 0, 0, 0, 3 - src, 0x02, 0, 0, 0, 0, src, 0x08, 0x00}, p...)
			c.mu.Lock()
			c.pkts = append(c.pkts, p)
			if len(segs) > 1 {
				c.cuts++
			}
			c.pcap.WriteFrame(time.Now(), frame)
			c.mu.Unlock()
			in := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: gbuffer.MakeWithData(p)})
			to.InjectInbound(header.IPv4ProtocolNumber, in)
			in.DecRef()
		}
	}
}

// checkSegments deframes each TCP segment's payload on its own (after the
// MPA Request or Reply of its direction) and reports any that does not
// hold whole FPDUs with good CRCs; it returns the number of FPDU segments
// and the largest payload.
func (c *nsCapture) checkSegments(t *testing.T) (segments, largest int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	type dir struct {
		isn    uint32
		mpaEnd int // stream offset just past the MPA Request or Reply; 0 unknown
	}
	dirs := map[uint16]*dir{}
	bad := 0
	for i, p := range c.pkts {
		ip := header.IPv4(p)
		if !ip.IsValid(len(p)) || ip.TransportProtocol() != header.TCPProtocolNumber {
			continue
		}
		tp := header.TCP(ip.Payload())
		d := dirs[tp.SourcePort()]
		if tp.Flags().Contains(header.TCPFlagSyn) {
			dirs[tp.SourcePort()] = &dir{isn: tp.SequenceNumber()}
			continue
		}
		payload := tp.Payload()
		if d == nil || len(payload) == 0 {
			continue
		}
		off := int(tp.SequenceNumber() - d.isn - 1)
		if off == 0 {
			// The MPA Request or Reply: its 20-octet header ends with the
			// private data length (RFC 5044 §7.1).
			d.mpaEnd = 20 + int(binary.BigEndian.Uint16(payload[18:20]))
			payload = payload[min(d.mpaEnd, len(payload)):]
		} else if off < d.mpaEnd {
			t.Errorf("packet %d: MPA Request or Reply split", i+1)
			continue
		}
		if len(payload) == 0 {
			continue
		}
		segments++
		largest = max(largest, len(tp.Payload()))
		dfr := wire.NewDeframer(wire.Framing{CRC: true}, wire.MaxULPDU)
		for rest := payload; ; {
			f, n, err := dfr.Next(rest)
			if err != nil {
				if err != wire.ErrIncomplete || dfr.Buffered() != 0 {
					if bad++; bad <= 5 {
						t.Errorf("packet %d (stream offset %d, %d bytes): not whole FPDUs: %v, %d octets left over",
							i+1, off, len(tp.Payload()), err, dfr.Buffered())
					}
				}
				break
			}
			if !f.CRCOK {
				t.Errorf("packet %d: bad CRC", i+1)
			}
			rest = rest[n:]
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d segments do not begin with an FPDU or cut one", bad, segments)
	}
	return segments, largest
}

// TestNetstackFPDUAlignment runs a 64 KiB WRITE, a 64 KiB READ and a 64 KiB
// SEND over gVisor TCP (the TAP mode's stream) with the engine sized for
// the default MSS 1460: FPDUs are sized to the connection's segment payload
// (1420: 1500 less IPv4, TCP and 40 octets of options), every segment
// holds whole FPDUs, and tshark finds every MPA CRC good. With offload
// the same holds of the segments cut from netstack's super-segments, and
// most segments are such cuts (the FPDUs went to netstack in batches).
func TestNetstackFPDUAlignment(t *testing.T) {
	for _, offload := range []bool{false, true} {
		t.Run(fmt.Sprintf("offload=%v", offload), func(t *testing.T) { testNetstackFPDUAlignment(t, offload) })
	}
}

func testNetstackFPDUAlignment(t *testing.T, offload bool) {
	path := filepath.Join(t.TempDir(), "netstack-iwarp.pcap")
	nc := newNSCapture(t, path, offload)
	clk := clock.NewReal()
	mk := func(name string, s *stack.Stack, addr netip.Addr, qpn uint32) *node {
		nd := &node{name: name, addr: addr, scq: &testCQ{}, rcq: &testCQ{}, rq: &testRQ{}}
		var err error
		nd.stack, err = NewStack(Config{Clock: clk, Network: netstack.New(s, 1, stream.TCPConfig{}), Addr: addr})
		if err != nil {
			t.Fatal(err)
		}
		nd.mem, _ = memory.NewTable(memory.Config{})
		nd.buf = make([]byte, bufSize)
		nd.mr, _ = nd.mem.Register(1, nd.buf, 0x10000, memory.LocalWrite|memory.RemoteWrite|memory.RemoteRead)
		eng, err := nd.stack.CreateQP(&verbs.QPConfig{Type: verbs.QPTypeRC, QPN: qpn, PD: 1, Memory: nd.mem,
			SendCQ: nd.scq, RecvCQ: nd.rcq, RQ: nd.rq, Cap: verbs.QPCap{MaxSendWR: 64, MaxSendSGE: 2}})
		if err != nil {
			t.Fatal(err)
		}
		nd.qp = eng.(*QP)
		if err := nd.qp.Modify(verbs.QPSReset, &verbs.QPAttr{State: verbs.QPSInit, AccessFlags: memory.RemoteWrite | memory.RemoteRead},
			verbs.AttrState|verbs.AttrAccessFlags); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nd.stack.Close)
		return nd
	}
	a, b := mk("A", nc.a, nsAddrA, 1), mk("B", nc.b, nsAddrB, 2)
	accepted := make(chan error, 1)
	l, err := b.stack.Listen(netip.AddrPortFrom(nsAddrB, 0), func(r *ConnRequest) {
		accepted <- r.Accept(b.qp.QPN(), []byte("ok"), 4, 4)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan ConnectResult, 1)
	if err := a.stack.Connect(a.qp.QPN(), l.Addr(), []byte("hi"), 4, 4, func(r ConnectResult) { done <- r }); err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Err != nil {
		t.Fatalf("connect: %+v", r)
	}
	a.qp.Mu.Lock()
	ulpdu, rec := a.qp.maxULPDU, a.qp.records != nil
	a.qp.Mu.Unlock()
	if want := ulpduFor(1420, false); !rec || ulpdu != want {
		t.Fatalf("records %v, max ULPDU %d; want records and %d (FPDUs of 1420 octets)", rec, ulpdu, want)
	}
	const n = 64 << 10
	fill(a.buf[:n], 3)
	fill(b.buf[n:2*n], 4)
	b.recv(1, 2*n, n)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, n)}, RemoteAddr: b.va(3 * n), RKey: b.mr.RKey()})
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(n, n)}, RemoteAddr: b.va(n), RKey: b.mr.RKey()})
	a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, n)}})
	wantWC(t, waitCQ(t, a.scq, 3), verbs.WC{WRID: 1, Opcode: verbs.WCRDMAWrite},
		verbs.WC{WRID: 2, Opcode: verbs.WCRDMARead, ByteLen: n}, verbs.WC{WRID: 3, Opcode: verbs.WCSend})
	wantWC(t, waitCQ(t, b.rcq, 1), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: n})
	if !bytes.Equal(b.buf[3*n:4*n], a.buf[:n]) || !bytes.Equal(a.buf[n:2*n], b.buf[n:2*n]) || !bytes.Equal(b.buf[2*n:3*n], a.buf[:n]) {
		t.Fatal("write, read or send data mismatch")
	}
	if err := a.stack.Disconnect(a.qp.QPN()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); b.qp.State() != verbs.QPSErr || a.qp.State() != verbs.QPSErr; {
		if time.Now().After(deadline) {
			t.Fatalf("states after disconnect: %v %v", a.qp.State(), b.qp.State())
		}
		time.Sleep(time.Millisecond)
	}
	segs, largest := nc.checkSegments(t)
	t.Logf("max ULPDU %d (FPDU %d octets); %d FPDU segments, largest payload %d", ulpdu, wire.FramedLen(wire.Framing{CRC: true}, 0, ulpdu), segs, largest)
	if largest > 1420 {
		t.Errorf("a segment carried %d octets, more than 1420", largest)
	}
	nc.mu.Lock()
	cuts := nc.cuts
	nc.mu.Unlock()
	if offload {
		t.Logf("%d segments cut from super-segments", cuts)
		if cuts < segs/2 {
			t.Errorf("only %d of %d FPDU segments were cut from super-segments: FPDUs did not go to netstack in batches", cuts, segs)
		}
	}
	if err := nc.pcap.Close(); err != nil {
		t.Fatal(err)
	}
	tsharktest.Check(t, path, tsharktest.Options{RequireMPA: true})
}
