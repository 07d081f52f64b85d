package roce

import (
	"net/netip"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/clock"
)

// captureLink is a link endpoint that keeps the last frame sent, so a
// benchmark measures the engine alone, not a transport.
type captureLink struct {
	last []byte
	sent int
	recv func([]byte)
}

func (l *captureLink) Send(f []byte) error {
	l.last = append(l.last[:0], f...)
	l.sent++
	return nil
}
func (l *captureLink) SetReceiver(f func([]byte)) { l.recv = f }
func (l *captureLink) Close() error               { return nil }

// benchQP builds a stack with one RTS QP whose peer is a captureLink.
func benchQP(b testing.TB, mtu verbs.MTU) (*Stack, *QP, *captureLink, *memory.Region, *testCQ) {
	link := &captureLink{}
	clk := clock.NewVirtual()
	s, err := NewStack(Config{Link: link, Clock: clk, MAC: [6]byte{2, 0, 0, 0, 0, 1},
		Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.1")}, Window: 1 << 16, AckEvery: 1 << 20, Budget: benchBudget})
	if err != nil {
		b.Fatal(err)
	}
	mem, _ := memory.NewTable(memory.Config{})
	mr, err := mem.Register(1, make([]byte, 1<<20), 0x10000, memory.LocalWrite|memory.RemoteWrite|memory.RemoteRead)
	if err != nil {
		b.Fatal(err)
	}
	cq := &testCQ{}
	eng, err := s.CreateQP(&verbs.QPConfig{Type: verbs.QPTypeRC, QPN: 0x11, PD: 1, Memory: mem, SendCQ: cq, RecvCQ: cq,
		RQ: &testRQ{}, Cap: verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		b.Fatal(err)
	}
	qp := eng.(*QP)
	steps := []struct {
		cur verbs.QPState
		a   verbs.QPAttr
		m   verbs.QPAttrMask
	}{
		{verbs.QPSReset, verbs.QPAttr{State: verbs.QPSInit, AccessFlags: memory.RemoteWrite}, verbs.AttrAccessFlags},
		{verbs.QPSInit, verbs.QPAttr{State: verbs.QPSRTR, PathMTU: mtu, DestQPN: 0x22, MaxDestRdAtomic: 1,
			AV: verbs.AddressVector{DGID: netip.MustParseAddr("::ffff:192.0.2.2"), DMAC: [6]byte{2, 0, 0, 0, 0, 2}}},
			verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrMaxDestRdAtomic},
		{verbs.QPSRTR, verbs.QPAttr{State: verbs.QPSRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1},
			verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrMaxQPRdAtomic},
	}
	for _, st := range steps {
		if err := qp.Modify(st.cur, &st.a, st.m|verbs.AttrState); err != nil {
			b.Fatal(err)
		}
	}
	return s, qp, link, mr, cq
}

// BenchmarkRequesterWrite: post a 64 KiB RDMA WRITE (16 packets at MTU
// 4096) and acknowledge it. Reports allocations per packet: the steady
// state must allocate nothing.
func BenchmarkRequesterWrite(b *testing.B) {
	s, qp, link, mr, cq := benchQP(b, verbs.MTU4096)
	const size, pkts = 65536, 16
	wr := verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: 0x10000, Length: size, LKey: mr.LKey()}}, RemoteAddr: 0x1000, RKey: 0x1234}
	ack := buildAck(b, qp)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if err := qp.PostSend(&wr); err != nil {
			b.Fatal(err)
		}
		// ACK the last PSN sent.
		setAckPSN(ack, wire.PSNAdd(qp.req.psn, -1))
		s.Input(ack)
		cq.wcs = cq.wcs[:0]
	}
	if link.sent != b.N*pkts {
		b.Fatalf("%d packets for %d WRs", link.sent, b.N)
	}
	b.ReportMetric(float64(link.sent)/float64(b.N), "pkts/op")
}

// BenchmarkResponderWrite: feed WRITE Middle packets to the responder (the
// steady state of a long WRITE), which places each into memory.
func BenchmarkResponderWrite(b *testing.B) {
	s, qp, _, mr, _ := benchQP(b, verbs.MTU4096)
	e := wire.Encap{SrcMAC: [6]byte{2, 0, 0, 0, 0, 2}, DstMAC: [6]byte{2, 0, 0, 0, 0, 1}, DF: true, TTL: 64,
		Src: netip.MustParseAddr("192.0.2.2"), Dst: netip.MustParseAddr("192.0.2.1"), SrcPort: 0xC000, DstPort: wire.UDPPort}
	h := wire.Headers{BTH: wire.BTHFields{Opcode: wire.RCWriteFirst, DestQP: qp.QPN(), PKey: wire.DefaultPKey},
		RETH: wire.RETHFields{VA: 0x10000, RKey: mr.RKey(), Length: 1 << 20}}
	first := wire.AppendFrame(nil, &e, &h, make([]byte, 4096))
	s.Input(first)
	h.BTH.Opcode = wire.RCWriteMiddle
	frames := make([][]byte, 200)
	for i := range frames {
		h.BTH.PSN = uint32(i + 1)
		frames[i] = wire.AppendFrame(nil, &e, &h, make([]byte, 4096))
	}
	b.SetBytes(4096)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(frames) {
			// Start the message over: a fresh FIRST at the expected PSN.
			b.StopTimer()
			qp.Mu.Lock()
			qp.resp.inMsg, qp.resp.epsn = msgNone, 0
			qp.Mu.Unlock()
			h.BTH.Opcode, h.BTH.PSN = wire.RCWriteFirst, 0
			s.Input(wire.AppendFrame(nil, &e, &h, make([]byte, 4096)))
			i = 0
			b.StartTimer()
		}
		s.Input(frames[i])
		i++
	}
	if got := s.ctr.Get(RcvdPkts); got < uint64(b.N) {
		b.Fatalf("only %d packets accepted", got)
	}
}

func buildAck(b testing.TB, qp *QP) []byte {
	e := wire.Encap{SrcMAC: [6]byte{2, 0, 0, 0, 0, 2}, DstMAC: [6]byte{2, 0, 0, 0, 0, 1}, DF: true, TTL: 64,
		Src: netip.MustParseAddr("192.0.2.2"), Dst: netip.MustParseAddr("192.0.2.1"), SrcPort: 0xC000, DstPort: wire.UDPPort}
	h := wire.Headers{BTH: wire.BTHFields{Opcode: wire.RCAck, DestQP: qp.QPN(), PKey: wire.DefaultPKey},
		AETH: wire.AETHFields{Syndrome: wire.ACKSyndrome(wire.CreditsUnlimited)}}
	return wire.AppendFrame(nil, &e, &h, nil)
}

// setAckPSN rewrites an ACK frame's PSN and reseals its ICRC.
func setAckPSN(frame []byte, psn uint32) {
	var f wire.Frame
	_ = f.Decode(frame, 0)
	f.Packet.BTH().SetPSN(psn)
	wire.PutICRC(f.Packet.Bytes(), f.ComputeICRC())
}

// TestWritePathAllocs: the steady-state WRITE path allocates nothing per
// packet, on the requester (segment, gather, send, ACK, complete) and on
// the responder (decode, verify, check rkey, place).
func TestWritePathAllocs(t *testing.T) {
	s, qp, _, mr, cq := benchQP(t, verbs.MTU4096)
	wr := verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: 0x10000, Length: 65536, LKey: mr.LKey()}}, RemoteAddr: 0x1000, RKey: 0x1234}
	ack := buildAck(t, qp)
	round := func() {
		if err := qp.PostSend(&wr); err != nil {
			t.Fatal(err)
		}
		setAckPSN(ack, wire.PSNAdd(qp.req.psn, -1))
		s.Input(ack)
		if len(cq.wcs) != 1 || cq.wcs[0].Status != verbs.WCSuccess {
			t.Fatalf("completions %v", cq.wcs)
		}
		cq.wcs = cq.wcs[:0]
	}
	round() // warm up: the first timer arm allocates its event
	if a := testing.AllocsPerRun(200, round); a != 0 {
		t.Fatalf("requester: %v allocations per 16-packet WRITE", a)
	}
	e := wire.Encap{SrcMAC: [6]byte{2, 0, 0, 0, 0, 2}, DstMAC: [6]byte{2, 0, 0, 0, 0, 1}, DF: true, TTL: 64,
		Src: netip.MustParseAddr("192.0.2.2"), Dst: netip.MustParseAddr("192.0.2.1"), SrcPort: 0xC000, DstPort: wire.UDPPort}
	h := wire.Headers{BTH: wire.BTHFields{Opcode: wire.RCWriteOnly, DestQP: qp.QPN(), PKey: wire.DefaultPKey, AckReq: true},
		RETH: wire.RETHFields{VA: 0x10000, RKey: mr.RKey(), Length: 4096}}
	frames := make([][]byte, 300)
	for i := range frames {
		h.BTH.PSN = uint32(i)
		frames[i] = wire.AppendFrame(nil, &e, &h, make([]byte, 4096))
	}
	i := 0
	if a := testing.AllocsPerRun(200, func() { s.Input(frames[i]); i++ }); a != 0 {
		t.Fatalf("responder: %v allocations per WRITE packet", a)
	}
	if got := s.ctr.Get(AcksSent); got < 200 {
		t.Fatalf("responder acknowledged only %d writes", got)
	}
}

// benchBudget is the stack budget of the benchmarks' QPs: the embedded
// mode's default on a 4 MiB socket buffer, so the measured path takes and
// returns budget as it does there (it never runs short).
var benchBudget = 2 << 20
