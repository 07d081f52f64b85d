package rocepeer

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/roce/cm/mad"
	"github.com/rnic/rnic/roce/wire"
)

func frame(t *testing.T, p Packet) []byte {
	t.Helper()
	e := wire.Encap{Src: netip.MustParseAddr("127.0.0.3"), Dst: netip.MustParseAddr("127.0.0.2"),
		TTL: 64, DF: true, SrcPort: 0xC001, DstPort: wire.UDPPort}
	return wire.AppendFrame(nil, &e, &p.H, p.Payload)
}

func decode(t *testing.T, b []byte) *wire.Frame {
	t.Helper()
	var f wire.Frame
	if err := f.Decode(b, 0); err != nil {
		t.Fatal(err)
	}
	if !f.VerifyICRC() {
		t.Fatal("ICRC does not verify")
	}
	return &f
}

func TestReadResponsesSegmentAndCarryMSN(t *testing.T) {
	r := Responder{DestQP: 0x11, MSN: 4, Credit: wire.CreditsUnlimited}
	data := make([]byte, 2500)
	ps := r.ReadResponses(0xFFFFFF, data, 1024)
	want := []wire.Opcode{wire.RCReadResponseFirst, wire.RCReadResponseMiddle, wire.RCReadResponseLast}
	if len(ps) != 3 {
		t.Fatalf("%d packets, want 3", len(ps))
	}
	for i, p := range ps {
		f := decode(t, frame(t, p))
		if f.Packet.Opcode() != want[i] || f.Packet.BTH().PSN() != wire.PSNAdd(0xFFFFFF, i) {
			t.Errorf("packet %d: %v psn %d", i, f.Packet.Opcode(), f.Packet.BTH().PSN())
		}
		if a := f.Packet.AETH(); (a != nil) != (i != 1) || a != nil && a.MSN() != 5 {
			t.Errorf("packet %d: AETH %v", i, a)
		}
	}
	if n := len(ps[2].Payload); n != 452 {
		t.Errorf("last payload %d bytes, want 452", n)
	}
	if one := r.ReadResponses(7, nil, 1024); len(one) != 1 || one[0].H.BTH.Opcode != wire.RCReadResponseOnly {
		t.Errorf("zero-length READ: %+v", one)
	}
}

func TestNAKSyndromes(t *testing.T) {
	r := Responder{DestQP: 3}
	f := decode(t, frame(t, r.NAK(9, wire.NAKRemoteAccess)))
	if s := f.Packet.AETH().Syndrome(); s.Type() != wire.AckTypeNAK || s.NAK() != wire.NAKRemoteAccess {
		t.Errorf("syndrome %v", s)
	}
	f = decode(t, frame(t, r.RNRNAK(9, 14)))
	if s := f.Packet.AETH().Syndrome(); s.Type() != wire.AckTypeRNRNAK || s.Value() != 14 {
		t.Errorf("syndrome %v", s)
	}
}

func TestUCWriteSegments(t *testing.T) {
	q := Requester{DestQP: 5, PSN: 10}
	ps := q.UCWrite(0x1000, 0xabc, make([]byte, 2049), 1024)
	if len(ps) != 3 || ps[0].H.BTH.Opcode != wire.UCWriteFirst || ps[0].H.RETH.Length != 2049 ||
		ps[2].H.BTH.Opcode != wire.UCWriteLast || ps[2].H.BTH.PSN != 12 || q.PSN != 13 {
		t.Errorf("segments %+v, next psn %d", ps, q.PSN)
	}
}

func TestRepeatsDropsSecondCopy(t *testing.T) {
	q := Requester{DestQP: 5, PSN: 10}
	b := frame(t, q.UCSend([]byte("x"), 1024)[0])
	var r Repeats
	if r.Fault(append([]byte(nil), b...)) == nil {
		t.Fatal("first copy dropped")
	}
	if r.Fault(append([]byte(nil), b...)) != nil {
		t.Fatal("second copy passed")
	}
	r.Reset()
	if r.Fault(b) == nil {
		t.Fatal("first copy after Reset dropped")
	}
}

func TestRewriteReseals(t *testing.T) {
	r := Responder{DestQP: 3}
	b := frame(t, r.NAK(9, wire.NAKRemoteAccess))
	out := Rewrite(Syndromes(wire.AckTypeNAK), SetSyndrome(wire.NAKSyndrome(wire.NAKRemoteOpError)))(b)
	f := decode(t, out)
	if f.Packet.AETH().Syndrome().NAK() != wire.NAKRemoteOpError {
		t.Errorf("not rewritten: %v", f.Packet.AETH().Syndrome())
	}
}

func TestGSIPacketCarriesCM(t *testing.T) {
	b, err := EncodeMAD(&mad.RTU{LocalCommID: 1, RemoteCommID: 2}, 99)
	if err != nil {
		t.Fatal(err)
	}
	f := decode(t, frame(t, GSIPacket(0, b)))
	m := CMFrom(&f.Packet)
	if m == nil || m.AttrID() != mad.AttrRTU || m.TID() != 99 || !IsCM(mad.AttrRTU)(&f.Packet) {
		t.Fatalf("MAD %v", m)
	}
}

func TestWindows(t *testing.T) {
	if AckTimeout(14) != 67108864*time.Nanosecond {
		t.Errorf("timeout 14 = %v", AckTimeout(14))
	}
	w := AckTimeoutWindow(10)
	if w.Contains(3*time.Millisecond) || !w.Contains(5*time.Millisecond) || w.Check("x", time.Second) == nil {
		t.Errorf("window %v", w)
	}
	if RNRWindow(14).Lo <= 1100*time.Microsecond || RNRWindow(14).Contains(time.Millisecond) {
		t.Errorf("rnr window %v", RNRWindow(14))
	}
}

func TestCheckGRHv4(t *testing.T) {
	q := Requester{DestQP: 5, SrcQP: 9}
	f := decode(t, frame(t, q.UDSend(0x11, []byte("hi"))))
	grh := make([]byte, 40)
	copy(grh[20:], f.IP())
	if err := CheckGRHv4(grh, f.IP()); err != nil {
		t.Fatal(err)
	}
	grh[8+20]-- // TTL
	if CheckGRHv4(grh, f.IP()) == nil {
		t.Fatal("a changed TTL (and checksum) passed")
	}
}
