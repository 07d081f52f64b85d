package roce

import (
	"bytes"
	"testing"

	"github.com/rnic/rnic/roce/wire"
)

// TestGSI: a MAD sent from A's QP1 arrives at B's GSI handler with A's
// address, source QP 1 and the default P_Key, in a UD SEND Only with the
// GSI Q_Key, AckReq set and a PSN that counts (as rxe sends them); a
// packet to QP1 with another Q_Key is dropped and counted.
func TestGSI(t *testing.T) {
	h := newHarness(t, defaultOpts())
	var got []GSIDatagram
	var mads [][]byte
	h.b.stack.SetGSIHandler(func(d *GSIDatagram) {
		got = append(got, *d)
		mads = append(mads, append([]byte(nil), d.MAD...))
	})
	mad := make([]byte, MADLen)
	for i := range mad {
		mad[i] = byte(i)
	}
	for range 2 {
		if err := h.a.stack.SendGSI(&GSISend{Dst: h.b.addr, DestQP: GSIQPN, MAD: mad}); err != nil {
			t.Fatal(err)
		}
	}
	h.run()
	if len(got) != 2 || got[0].Src != h.a.addr || got[0].SrcQP != GSIQPN || got[0].PKey != wire.DefaultPKey || !bytes.Equal(mads[1], mad) {
		t.Fatalf("delivered %+v", got)
	}
	if err := h.a.stack.SendGSI(&GSISend{Dst: h.b.addr, PKeyIndex: 1, MAD: mad}); err == nil {
		t.Fatal("P_Key index 1 accepted")
	}
	// The frame on the wire, and one with a wrong Q_Key.
	g := &h.a.stack.gsi
	var f wire.Frame
	if err := f.Decode(g.buf, wire.UDPPort); err != nil {
		t.Fatal(err)
	}
	bth, deth := f.Packet.BTH(), f.Packet.DETH()
	if bth.Opcode() != wire.UDSendOnly || !bth.AckReq() || bth.PSN() != 1 || deth.QKey() != GSIQKey || deth.SrcQP() != GSIQPN || f.SrcPort() != SourcePort(1) {
		t.Fatalf("GSI frame: %+v %+v", bth.Fields(), deth.Fields())
	}
	// IPv4 ID 0 with DF on every MAD (the second one too), as the RC
	// engine's frames: the embedded mode's kernel sockets send only that.
	if ip := f.IP(); ip[4] != 0 || ip[5] != 0 || ip[6]&0x40 == 0 || !f.VerifyICRC() {
		t.Fatalf("GSI frame IPv4 ID %#04x, flags %#02x, ICRC ok %v", uint16(ip[4])<<8|uint16(ip[5]), ip[6], f.VerifyICRC())
	}
	bad := append([]byte(nil), g.buf...)
	var bf wire.Frame
	bf.Decode(bad, wire.UDPPort)
	copy(bf.Packet.DETH(), []byte{0, 0, 0, 1})
	bf.Seal()
	before := h.b.stack.Counters().Get(QKeyViolation)
	h.b.stack.Input(bad)
	if len(got) != 2 || h.b.stack.Counters().Get(QKeyViolation) != before+1 {
		t.Fatal("a wrong Q_Key reached the GSI")
	}
}
