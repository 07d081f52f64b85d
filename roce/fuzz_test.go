package roce

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/clock"
)

// FuzzEstablishedQP feeds arbitrary packets, wrapped in frames with a valid
// ICRC and addressed to the QP, into an RTS QP that has READs, atomics,
// SENDs, WRITEs, an ATOMIC WRITE and a FLUSH outstanding, so they reach the responder and the
// completer. Whatever arrives, nothing panics, no byte outside the
// registered region changes, and the engine's state stays bounded.
func FuzzEstablishedQP(f *testing.F) {
	// Seeds: one of every opcode, with plausible PSNs.
	for _, op := range []wire.Opcode{wire.RCSendOnly, wire.RCSendFirst, wire.RCWriteOnly, wire.RCWriteFirst,
		wire.RCReadRequest, wire.RCCmpSwap, wire.RCFetchAdd, wire.RCAck, wire.RCAtomicAck,
		wire.RCReadResponseFirst, wire.RCReadResponseOnly, wire.RCReadResponseLast, wire.RCSendLastInv,
		wire.RCAtomicWrite, wire.RCFlush} {
		for _, psn := range []uint32{100, 101, 200, 99} {
			h := wire.Headers{BTH: wire.BTHFields{Opcode: op, PSN: psn, AckReq: true},
				RETH:      wire.RETHFields{VA: 0x10000, RKey: 0, Length: 64},
				AETH:      wire.AETHFields{Syndrome: wire.ACKSyndrome(wire.CreditsUnlimited), MSN: 1},
				AtomicETH: wire.AtomicETHFields{VA: 0x10008, SwapAdd: 1},
				FETH:      wire.MakeFETH(wire.FlushGlobalVisibility, wire.FlushSelectRange)}
			n := 64
			if op == wire.RCAtomicWrite {
				h.RETH.Length, n = 8, 8
			}
			pkt := wire.AppendPacket(nil, &h, bytes.Repeat([]byte{0xAB}, n))
			f.Add(append([]byte{byte(len(pkt)), byte(len(pkt) >> 8)}, pkt...))
		}
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		const guard = 4096
		backing := make([]byte, guard+65536+guard)
		for i := range backing {
			backing[i] = 0x5A
		}
		region := backing[guard : guard+65536]
		clear(region)
		link := &captureLink{}
		clk := clock.NewVirtual()
		s, err := NewStack(Config{Link: link, Clock: clk, MAC: [6]byte{2, 0, 0, 0, 0, 1},
			Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.1")}})
		if err != nil {
			t.Fatal(err)
		}
		mem, _ := memory.NewTable(memory.Config{MaxRegions: 8, MaxWindows: 8})
		all := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic | memory.FlushGlobal | memory.FlushPersistent
		mr, err := mem.Register(1, region, 0x10000, all)
		if err != nil {
			t.Fatal(err)
		}
		cq := &testCQ{limit: 64}
		rq := &testRQ{}
		for i := 0; i < 4; i++ {
			rq.q = append(rq.q, verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{{Addr: 0x10000 + uint64(i)*4096, Length: 4096, LKey: mr.LKey()}}})
		}
		eng, _ := s.CreateQP(&verbs.QPConfig{Type: verbs.QPTypeRC, QPN: 0x11, PD: 1, Memory: mem, SendCQ: cq, RecvCQ: cq, RQ: rq,
			Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 64}})
		qp := eng.(*QP)
		for _, st := range []struct {
			cur verbs.QPState
			a   verbs.QPAttr
			m   verbs.QPAttrMask
		}{
			{verbs.QPSReset, verbs.QPAttr{State: verbs.QPSInit, AccessFlags: all}, verbs.AttrAccessFlags},
			{verbs.QPSInit, verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU256, DestQPN: 0x22, MaxDestRdAtomic: 4, RQPSN: 100,
				AV: verbs.AddressVector{DGID: netip.MustParseAddr("::ffff:192.0.2.2"), DMAC: [6]byte{2, 0, 0, 0, 0, 2}}},
				verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrMaxDestRdAtomic | verbs.AttrRQPSN},
			{verbs.QPSRTR, verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 100, Timeout: 1, RetryCnt: 2, RNRRetry: 2, MaxRdAtomic: 4},
				verbs.AttrSQPSN | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrMaxQPRdAtomic},
		} {
			if err := qp.Modify(st.cur, &st.a, st.m|verbs.AttrState); err != nil {
				t.Fatal(err)
			}
		}
		sge := func(off, n int) []verbs.SGE {
			return []verbs.SGE{{Addr: 0x10000 + uint64(off), Length: uint32(n), LKey: mr.LKey()}}
		}
		for _, wr := range []verbs.SendWR{
			{ID: 1, Opcode: verbs.WRRDMARead, SGL: sge(0x8000, 1000), RemoteAddr: 0x5000, RKey: 7},
			{ID: 2, Opcode: verbs.WRAtomicCmpSwp, SGL: sge(0x9000, 8), RemoteAddr: 0x5000, RKey: 7},
			{ID: 3, Opcode: verbs.WRSend, SGL: sge(0, 600)},
			{ID: 4, Opcode: verbs.WRRDMAWrite, SGL: sge(0, 300), RemoteAddr: 0x5000, RKey: 7},
			{ID: 5, Opcode: verbs.WRAtomicWrite, RemoteAddr: 0x5008, RKey: 7, Swap: 9},
			{ID: 6, Opcode: verbs.WRFlush, RemoteAddr: 0x5000, RKey: 7, FlushType: verbs.FlushGlobal, FlushLen: 64},
		} {
			if err := qp.PostSend(&wr); err != nil {
				t.Fatal(err)
			}
		}
		e := wire.Encap{SrcMAC: [6]byte{2, 0, 0, 0, 0, 2}, DstMAC: [6]byte{2, 0, 0, 0, 0, 1}, DF: true, TTL: 64,
			Src: netip.MustParseAddr("192.0.2.2"), Dst: netip.MustParseAddr("192.0.2.1"), SrcPort: 0xC000, DstPort: wire.UDPPort}
		var frame []byte
		for len(data) >= 2 {
			n := int(data[0]) | int(data[1])<<8
			data = data[2:]
			if n > len(data) {
				n = len(data)
			}
			pkt := data[:n]
			data = data[n:]
			var p wire.Packet
			if p.Decode(pkt) != nil {
				continue
			}
			// Address the packet to the QP and wrap it in a valid frame.
			h := p.Headers()
			h.BTH.DestQP, h.BTH.PKey = 0x11, wire.DefaultPKey
			frame = wire.AppendFrame(frame[:0], &e, &h, p.Payload())
			s.Input(frame)
			clk.RunFor(10_000) // let timers fire now and then
		}
		clk.RunFor(1e9)
		if !bytes.Equal(backing[:guard], bytes.Repeat([]byte{0x5A}, guard)) ||
			!bytes.Equal(backing[guard+65536:], bytes.Repeat([]byte{0x5A}, guard)) {
			t.Fatal("a byte outside the registered region changed")
		}
		if len(qp.resp.res) != 4 || len(qp.req.sq) != 16 || qp.req.tail-qp.req.head > 16 {
			t.Fatal("engine state grew")
		}
		if len(cq.wcs) > 64 {
			t.Fatal("more completions than the CQ holds")
		}
	})
}
