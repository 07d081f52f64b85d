package roce

import (
	"net/netip"
	"testing"

	"github.com/rnic/rnic/roce/wire"
)

// TestBadPKeyCounted: a packet whose BTH P_Key does not match the port's
// one key (the full default 0xFFFF) is dropped and counted as bad_pkey;
// the limited default 0x7FFF matches it (IBTA §10.9.3, as rxe's
// pkey_match), and so reaches the QP.
func TestBadPKeyCounted(t *testing.T) {
	s, qp, _, mr, _ := benchQP(t, 0x5)
	e := wire.Encap{SrcMAC: [6]byte{2, 0, 0, 0, 0, 2}, DstMAC: [6]byte{2, 0, 0, 0, 0, 1}, DF: true, TTL: 64,
		Src: netip.MustParseAddr("192.0.2.2"), Dst: netip.MustParseAddr("192.0.2.1"), SrcPort: 0xC000, DstPort: wire.UDPPort}
	psn := uint32(0)
	for _, c := range []struct {
		pkey uint16
		ok   bool
	}{
		{0xFFFF, true}, {0x7FFF, true}, {0x8001, false}, {0x0000, false}, {0x8000, false}, {0x7FFE, false},
	} {
		bad, rcvd := s.ctr.Get(BadPKey), s.ctr.Get(RcvdPkts)
		h := wire.Headers{BTH: wire.BTHFields{Opcode: wire.RCWriteOnly, DestQP: qp.QPN(), PKey: c.pkey, PSN: psn},
			RETH: wire.RETHFields{VA: 0x10000, RKey: mr.RKey(), Length: 8}}
		s.Input(wire.AppendFrame(nil, &e, &h, make([]byte, 8)))
		gotBad, gotRcvd := s.ctr.Get(BadPKey)-bad, s.ctr.Get(RcvdPkts)-rcvd
		if c.ok && (gotBad != 0 || gotRcvd != 1) {
			t.Errorf("P_Key %#04x: bad_pkey +%d, rcvd_pkts +%d; want accepted", c.pkey, gotBad, gotRcvd)
		}
		if !c.ok && (gotBad != 1 || gotRcvd != 0) {
			t.Errorf("P_Key %#04x: bad_pkey +%d, rcvd_pkts +%d; want dropped and counted", c.pkey, gotBad, gotRcvd)
		}
		if c.ok {
			psn++
		}
	}
}
