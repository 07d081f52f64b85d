package wire

import (
	"bytes"
	"net/netip"
	"testing"
	"time"
)

func testEncap(v6, vlan bool) Encap {
	e := Encap{
		DstMAC: [6]byte{0x02, 0, 0, 0, 0, 2}, SrcMAC: [6]byte{0x02, 0, 0, 0, 0, 1},
		VLAN: vlan, TCI: 0x2064, TTL: 64, DF: true, IPID: 0,
		Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("192.0.2.2"),
		SrcPort: 0xC123, DstPort: UDPPort, TOS: 0x02,
	}
	if v6 {
		e.Src, e.Dst = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
		e.FlowLabel = 0x12345
	}
	return e
}

// allHeaders fills every header with distinct values so a field that lands
// in the wrong place shows up.
func allHeaders(op Opcode) Headers {
	return Headers{
		BTH: BTHFields{Opcode: op, SE: true, PKey: DefaultPKey, DestQP: 0xABCDEF, AckReq: true,
			PSN: 0xFEDCBA, BECN: op == CNP},
		RETH:      RETHFields{VA: 0x1122334455667788, RKey: 0x99AABBCC, Length: 0x7FFFFFFF},
		AETH:      AETHFields{Syndrome: NAKSyndrome(NAKRemoteAccess), MSN: 0x123456},
		AtomicETH: AtomicETHFields{VA: 0x0102030405060708, RKey: 0xDEADBEEF, SwapAdd: 0xAAAA, Compare: 0xBBBB},
		AtomicAck: 0xCAFEBABE12345678,
		Imm:       0x01020304,
		IETH:      0x0BADF00D,
		DETH:      DETHFields{QKey: 0x80010000, SrcQP: 0x000001},
		FETH:      uint32(MakeFETH(FlushPersistence, FlushSelectWholeMR)),
	}
}

func validOpcodes() []Opcode {
	var ops []Opcode
	for i := 0; i < 256; i++ {
		if Opcode(i).Valid() {
			ops = append(ops, Opcode(i))
		}
	}
	return ops
}

func TestOpcodeTable(t *testing.T) {
	if n := len(validOpcodes()); n != 25+12+2+1 {
		t.Fatalf("%d valid opcodes, want 40 (25 RC, 12 UC, 2 UD, CNP)", n)
	}
	cases := []struct {
		op   Opcode
		name string
		hdrs []Hdr
		pay  bool
		pos  Position
		resp bool
	}{
		{RCWriteOnlyImm, "RC RDMA WRITE Only with Immediate", []Hdr{HdrRETH, HdrImmDt}, true, PosOnly, false},
		{RCAtomicAck, "RC ATOMIC Acknowledge", []Hdr{HdrAETH, HdrAtomicAckETH}, false, PosNone, true},
		{RCFlush, "RC FLUSH", []Hdr{HdrFETH, HdrRETH}, false, PosNone, false},
		{RCAtomicWrite, "RC ATOMIC WRITE", []Hdr{HdrRETH}, true, PosNone, false},
		{UDSendOnlyImm, "UD SEND Only with Immediate", []Hdr{HdrDETH, HdrImmDt}, true, PosOnly, false},
		{UCWriteFirst, "UC RDMA WRITE First", []Hdr{HdrRETH}, true, PosFirst, false},
		{RCSendLastInv, "RC SEND Last with Invalidate", []Hdr{HdrIETH}, true, PosLast, false},
		{RCReadResponseMiddle, "RC RDMA READ Response Middle", nil, true, PosMiddle, true},
		{RCReadResponseLast, "RC RDMA READ Response Last", []Hdr{HdrAETH}, true, PosLast, true},
		{CNP, "CNP Congestion Notification", []Hdr{HdrCNPPad}, false, PosNone, false},
	}
	for _, c := range cases {
		o := c.op.Info()
		if o.Name != c.name || o.Payload != c.pay || o.Pos != c.pos || o.Response != c.resp {
			t.Errorf("%#x: got %q payload=%v pos=%v resp=%v", uint8(c.op), o.Name, o.Payload, o.Pos, o.Response)
		}
		if len(o.Hdrs) != len(c.hdrs) {
			t.Errorf("%v: headers %v, want %v", c.op, o.Hdrs, c.hdrs)
			continue
		}
		for i := range c.hdrs {
			if o.Hdrs[i] != c.hdrs[i] {
				t.Errorf("%v: headers %v, want %v", c.op, o.Hdrs, c.hdrs)
			}
		}
	}
	for _, op := range []Opcode{0x15, 0x18, 0x1B, 0x1E, 0x1F, 0x2C, 0x40, 0x60, 0x63, 0x66, 0x80, 0xA0, 0xFF} {
		if op.Valid() {
			t.Errorf("%#x should be invalid", uint8(op))
		}
	}
	if !RCCmpSwap.Info().AckRequired || RCAck.Info().AckRequired || UCSendOnly.Info().AckRequired {
		t.Error("AckRequired wrong")
	}
}

// TestRoundTrip encodes every opcode over IPv4 and IPv6, with and without
// 802.1Q, with payloads giving pad 0..3, decodes the frame and checks every
// field, the payload, the pad and the ICRC; re-encoding gives the same bytes.
func TestRoundTrip(t *testing.T) {
	for _, op := range validOpcodes() {
		for _, v6 := range []bool{false, true} {
			for _, vlan := range []bool{false, true} {
				for n := 0; n <= 8; n++ {
					payload := []byte("abcdefgh")[:n]
					if !op.Info().Payload {
						if n > 0 {
							continue
						}
						payload = nil
					}
					if fp := op.Info().FixedPayload; fp != 0 {
						if n != fp {
							continue
						}
					}
					e := testEncap(v6, vlan)
					h := allHeaders(op)
					b := AppendFrame(nil, &e, &h, payload)
					var f Frame
					if err := f.Decode(b, 0); err != nil {
						t.Fatalf("%v v6=%v vlan=%v n=%d: %v", op, v6, vlan, n, err)
					}
					if !f.VerifyICRC() {
						t.Fatalf("%v: ICRC does not verify", op)
					}
					if f.IPv6 != v6 || f.VLAN != vlan {
						t.Fatalf("%v: v6=%v vlan=%v", op, f.IPv6, f.VLAN)
					}
					got := f.Packet.Headers()
					want := h
					want.BTH.PadCnt = PadFor(len(payload))
					if got.BTH != want.BTH {
						t.Fatalf("%v: BTH %+v, want %+v", op, got.BTH, want.BTH)
					}
					o := op.Info()
					check := func(hd Hdr, eq bool) {
						if o.Has(hd) && !eq {
							t.Errorf("%v: %v mismatch: %+v", op, hd, got)
						}
					}
					check(HdrRETH, got.RETH == h.RETH)
					check(HdrAETH, got.AETH == h.AETH)
					check(HdrAtomicETH, got.AtomicETH == h.AtomicETH)
					check(HdrAtomicAckETH, got.AtomicAck == h.AtomicAck)
					check(HdrImmDt, got.Imm == h.Imm)
					check(HdrIETH, got.IETH == h.IETH)
					check(HdrDETH, got.DETH == h.DETH)
					check(HdrFETH, got.FETH == h.FETH)
					if !bytes.Equal(f.Packet.Payload(), payload) {
						t.Fatalf("%v: payload %q want %q", op, f.Packet.Payload(), payload)
					}
					if len(f.Packet.PadBytes()) != PadFor(n) || !bytes.Equal(f.Packet.PadBytes(), make([]byte, PadFor(n))) {
						t.Fatalf("%v: pad %x", op, f.Packet.PadBytes())
					}
					if (len(f.Packet.Payload())+len(f.Packet.PadBytes()))%4 != 0 {
						t.Fatalf("%v: payload+pad not a multiple of 4", op)
					}
					ee := f.Encap()
					if ee.Src != e.Src || ee.Dst != e.Dst || ee.SrcPort != e.SrcPort || ee.TTL != e.TTL || ee.TOS != e.TOS {
						t.Fatalf("%v: encap %+v want %+v", op, ee, e)
					}
					again := AppendFrame(nil, &ee, &got, f.Packet.Payload())
					if !bytes.Equal(again, b) {
						t.Fatalf("%v v6=%v vlan=%v n=%d: re-encode differs", op, v6, vlan, n)
					}
				}
			}
		}
	}
}

// TestUDPChecksum: IPv6 frames carry a valid UDP checksum (a receiver's
// ones'-complement sum over pseudo-header and datagram is all ones); IPv4
// frames carry zero unless asked.
func TestUDPChecksum(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		e := testEncap(v6, false)
		h := allHeaders(RCSendOnly)
		b := AppendFrame(nil, &e, &h, []byte("hello"))
		var f Frame
		if err := f.Decode(b, 0); err != nil {
			t.Fatal(err)
		}
		udp := b[len(b)-len(f.Packet.Bytes())-UDPLen:]
		cs := uint16(udp[6])<<8 | uint16(udp[7])
		if !v6 {
			if cs != 0 {
				t.Fatalf("IPv4 UDP checksum %#x, want 0", cs)
			}
			e.UDPChecksum = ChecksumCompute
			b = AppendFrame(nil, &e, &h, []byte("hello"))
			if err := f.Decode(b, 0); err != nil {
				t.Fatal(err)
			}
			udp = b[len(b)-len(f.Packet.Bytes())-UDPLen:]
		}
		ip := f.IP()
		var sum uint32
		if v6 {
			sum = uint32(onesSum(0, ip[8:40]))
		} else {
			sum = uint32(onesSum(0, ip[12:20]))
		}
		sum += 17 + uint32(len(udp))
		if got := onesSum(sum+uint32(onesSum(0, udp)), nil); got != 0xFFFF {
			t.Fatalf("v6=%v: UDP checksum does not verify (sum %#x)", v6, got)
		}
		if !f.VerifyICRC() {
			t.Fatal("ICRC changed by the UDP checksum")
		}
	}
	// IPv4 header checksum verifies.
	e := testEncap(false, false)
	h := allHeaders(RCAck)
	b := AppendFrame(nil, &e, &h, nil)
	if s := onesSum(0, b[EthLen:EthLen+IPv4Len]); s != 0xFFFF {
		t.Fatalf("IPv4 header checksum does not verify: %#x", s)
	}
}

func TestDecodeErrors(t *testing.T) {
	e := testEncap(false, false)
	h := allHeaders(RCWriteOnly)
	good := AppendFrame(nil, &e, &h, []byte("data"))
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	l3, l4, bth := EthLen, EthLen+IPv4Len, EthLen+IPv4Len+UDPLen
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"arp", mut(func(b []byte) []byte { b[12], b[13] = 0x08, 0x06; return b }), ErrNotIP},
		{"ipv4 version", mut(func(b []byte) []byte { b[l3] = 0x55; return b }), ErrBadIPHeader},
		{"ihl too small", mut(func(b []byte) []byte { b[l3] = 0x44; return b }), ErrBadIPHeader},
		{"fragment", mut(func(b []byte) []byte { b[l3+6] |= 0x20; return b }), ErrIPFragment},
		{"tcp", mut(func(b []byte) []byte { b[l3+9] = 6; return b }), ErrNotUDP},
		{"ip total too long", mut(func(b []byte) []byte { b[l3+3] += 4; return b }), ErrTruncated},
		{"udp length", mut(func(b []byte) []byte { b[l4+5]--; return b }), ErrBadUDPLength},
		{"other port", mut(func(b []byte) []byte { b[l4+3]++; return b }), ErrNotRoCEPort},
		{"reserved opcode", mut(func(b []byte) []byte { b[bth] = 0x15; return b }), ErrBadOpcode},
		{"tver", mut(func(b []byte) []byte { b[bth+1] |= 1; return b }), ErrBadTVer},
		{"pad on ack", mut(func(b []byte) []byte { b[bth] = byte(RCReadRequest); b[bth+1] |= 0x10; return b }), ErrBadPad},
		{"read request with payload", mut(func(b []byte) []byte { b[bth] = byte(RCReadRequest); return b }), ErrBadLength},
		{"atomic too short", mut(func(b []byte) []byte { b[bth] = byte(RCCmpSwap); return b }), ErrBadLength},
	}
	for _, c := range cases {
		var f Frame
		if err := f.Decode(c.b, 0); err != c.want {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// A flipped payload byte decodes but fails the ICRC.
	bad := mut(func(b []byte) []byte { b[len(b)-6] ^= 0x80; return b })
	var f Frame
	if err := f.Decode(bad, 0); err != nil || f.VerifyICRC() {
		t.Fatalf("flipped payload: err=%v verify=%v", err, f.VerifyICRC())
	}
	// Ethernet padding after the datagram is tolerated and exposed.
	padded := append(append([]byte(nil), good...), 0, 0, 0, 0)
	if err := f.Decode(padded, 0); err != nil || !f.VerifyICRC() || len(f.Trailer()) != 4 {
		t.Fatalf("trailer: err=%v", err)
	}
	// A custom port.
	e.DstPort = 4792
	other := AppendFrame(nil, &e, &h, nil)
	if err := f.Decode(other, 0); err != ErrNotRoCEPort {
		t.Fatalf("port 4792 with default: %v", err)
	}
	if err := f.Decode(other, 4792); err != nil {
		t.Fatalf("port 4792: %v", err)
	}
}

func TestAETH(t *testing.T) {
	if d := RNRDelay(25); d != 61440*time.Microsecond {
		t.Fatalf("RNR code 25 = %v, want 61.44ms (rxe's 61.41 is a typo)", d)
	}
	wantMs := []float64{655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32, 0.48, 0.64, 0.96,
		1.28, 1.92, 2.56, 3.84, 5.12, 7.68, 10.24, 15.36, 20.48, 30.72, 40.96, 61.44, 81.92, 122.88, 163.84,
		245.76, 327.68, 491.52}
	for code, ms := range wantMs {
		if got := RNRDelay(uint8(code)); got != time.Duration(ms*1e6+0.5) {
			t.Errorf("RNR code %d = %v, want %vms", code, got, ms)
		}
	}
	s := RNRNAKSyndrome(14)
	if s.Type() != AckTypeRNRNAK || s.Value() != 14 || uint8(s) != 0x2E {
		t.Fatalf("RNR syndrome %#x", uint8(s))
	}
	n := NAKSyndrome(NAKPSNSeqError)
	if uint8(n) != 0x60 || n.Type() != AckTypeNAK || n.NAK() != NAKPSNSeqError {
		t.Fatalf("NAK syndrome %#x", uint8(n))
	}
	if uint8(NAKSyndrome(NAKRemoteOpError)) != 0x63 {
		t.Fatal("remote op error syndrome")
	}
	if c, unl := ACKSyndrome(CreditsUnlimited).Credits(); !unl || c != 0 {
		t.Fatal("0x1F must mean unlimited")
	}
	for code := uint8(0); code < 31; code++ {
		c, unl := ACKSyndrome(code).Credits()
		if unl || CreditCode(c) != code {
			t.Fatalf("credit code %d -> %d credits -> code %d", code, c, CreditCode(c))
		}
	}
	if CreditCode(5) != 4 || CreditCode(7) != 5 || CreditCode(100000) != 30 || CreditCode(0) != 0 {
		t.Fatal("CreditCode must round down")
	}
	var a [4]byte
	AETH(a[:]).Encode(ACKSyndrome(CreditsUnlimited), 0xABCDEF)
	if a != [4]byte{0x1F, 0xAB, 0xCD, 0xEF} {
		t.Fatalf("AETH bytes %x", a)
	}
}

func TestPSN(t *testing.T) {
	cases := []struct {
		a, b uint32
		d    int32
	}{
		{5, 3, 2}, {3, 5, -2}, {0, 0xFFFFFF, 1}, {0xFFFFFF, 0, -1}, {0x7FFFFF, 0, 0x7FFFFF},
		{0x800000, 0, 0x800000}, {0x800001, 0, -0x7FFFFF},
	}
	for _, c := range cases {
		if got := PSNDiff(c.a, c.b); got != c.d {
			t.Errorf("PSNDiff(%#x,%#x)=%d want %d", c.a, c.b, got, c.d)
		}
	}
	if PSNAdd(0xFFFFFE, 3) != 1 || PSNAdd(1, -2) != 0xFFFFFF {
		t.Fatal("PSNAdd wrap")
	}
	if !PSNBefore(0xFFFFF0, 2) || PSNBefore(2, 0xFFFFF0) || !PSNAfterOrEqual(7, 7) {
		t.Fatal("PSN compare across wrap")
	}
}

// TestDecodeAllocs: decoding a frame, reading its headers and verifying its
// ICRC allocate nothing (nic/README.md, principle 2).
func TestDecodeAllocs(t *testing.T) {
	for _, op := range []Opcode{RCWriteFirst, RCSendOnlyImm, RCAtomicAck, UDSendOnly, RCReadRequest} {
		for _, v6 := range []bool{false, true} {
			e := testEncap(v6, true)
			h := allHeaders(op)
			b := AppendFrame(nil, &e, &h, make([]byte, 1024))
			var f Frame
			allocs := testing.AllocsPerRun(100, func() {
				if err := f.Decode(b, 0); err != nil {
					t.Fatal(err)
				}
				if !f.VerifyICRC() {
					t.Fatal("icrc")
				}
				_ = f.Packet.Headers()
				_ = f.Packet.BTH().PSN()
				if r := f.Packet.RETH(); r != nil {
					_ = r.RKey()
				}
			})
			if allocs != 0 {
				t.Fatalf("%v v6=%v: %v allocations per decode", op, v6, allocs)
			}
		}
	}
	// An error return allocates nothing either.
	var f Frame
	short := []byte{1, 2, 3}
	if a := testing.AllocsPerRun(100, func() { _ = f.Decode(short, 0) }); a != 0 {
		t.Fatalf("%v allocations on error", a)
	}
}

// TestEncodeAllocs: encoding into a buffer with room allocates nothing.
func TestEncodeAllocs(t *testing.T) {
	e := testEncap(false, false)
	h := allHeaders(RCWriteMiddle)
	payload := make([]byte, 4096)
	buf := make([]byte, 0, 5000)
	if a := testing.AllocsPerRun(100, func() { buf = AppendFrame(buf[:0], &e, &h, payload) }); a != 0 {
		t.Fatalf("%v allocations per encode", a)
	}
}

func BenchmarkDecodeVerify4096(b *testing.B) {
	e := testEncap(false, false)
	h := allHeaders(RCWriteMiddle)
	fr := AppendFrame(nil, &e, &h, make([]byte, 4096))
	b.SetBytes(int64(len(fr)))
	b.ReportAllocs()
	var f Frame
	for b.Loop() {
		if f.Decode(fr, 0) != nil || !f.VerifyICRC() {
			b.Fatal("decode")
		}
	}
}

func BenchmarkEncode4096(b *testing.B) {
	e := testEncap(false, false)
	h := allHeaders(RCWriteMiddle)
	payload := make([]byte, 4096)
	buf := make([]byte, 0, 5000)
	b.SetBytes(4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFrame(buf[:0], &e, &h, payload)
	}
}
