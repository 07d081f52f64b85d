package wire

import (
	"bytes"
	"testing"
)

// testHeaders fills every field with distinct values so that a field that
// lands in the wrong place shows up.
func testHeaders(op Opcode) Headers {
	info := op.Info()
	h := Headers{
		DDP: DDPFields{Tagged: info.Tagged, Last: true, Opcode: op,
			STag: 0x11223344, TO: 0x5566778899AABBCC,
			QN: info.QN, MSN: 0x01020304, MO: 0x0A0B0C0D},
		ReadRequest: ReadRequestFields{SinkSTag: 0xA1A2A3A4, SinkTO: 0xB1B2B3B4B5B6B7B8,
			Size: 0x7FFFFFFF, SourceSTag: 0xC1C2C3C4, SourceTO: 0xD1D2D3D4D5D6D7D8},
		AtomicRequest: AtomicRequestFields{Op: AtomicCmpSwap, RequestID: 0x42, STag: 0xE1E2E3E4,
			TO: 0x1000, AddSwapData: 0xF0F1F2F3F4F5F6F7, AddSwapMask: ^uint64(0),
			CompareData: 0x0102030405060708, CompareMask: 0xFFFF0000FFFF0000},
		AtomicResponse: AtomicResponseFields{RequestID: 0x42, OriginalValue: 0x8877665544332211},
		Immediate:      0xCAFEBABEDEADBEEF,
	}
	if info.Invalidate {
		h.DDP.RsvdULP = 0x0BADF00D
	}
	return h
}

// testPayload is what follows the headers: ULP data for the opcodes that
// carry it, a Terminate body for Terminate, nothing for the others.
func testPayload(op Opcode, n int) []byte {
	info := op.Info()
	switch {
	case info.Payload:
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(i*7 + 1)
		}
		return p
	case info.Body == BodyTerminate:
		h := testHeaders(OpReadRequest)
		rr := AppendSegment(nil, &h, nil)
		return AppendTerminate(nil, &TermFields{Code: TermRDMAPInvalidSTag, M: true, D: true, R: true,
			DDPSegLen: uint16(len(rr)), DDPHeader: rr[:DDPUntaggedLen], RDMAPHeader: rr[DDPUntaggedLen:]})
	}
	return nil
}

func validOpcodes() []Opcode {
	var ops []Opcode
	for op := Opcode(0); op < 16; op++ {
		if op.Valid() {
			ops = append(ops, op)
		}
	}
	return ops
}

func TestOpcodeTable(t *testing.T) {
	if n := len(validOpcodes()); n != 12 {
		t.Fatalf("%d valid opcodes, want 12", n)
	}
	cases := []struct {
		op      Opcode
		tagged  bool
		qn      uint32
		body    Body
		payload bool
	}{
		{OpWrite, true, 0, BodyNone, true},
		{OpReadRequest, false, 1, BodyReadRequest, false},
		{OpReadResponse, true, 0, BodyNone, true},
		{OpSend, false, 0, BodyNone, true},
		{OpSendInvalidate, false, 0, BodyNone, true},
		{OpSendSE, false, 0, BodyNone, true},
		{OpSendSEInvalidate, false, 0, BodyNone, true},
		{OpTerminate, false, 2, BodyTerminate, false},
		{OpImmediate, false, 0, BodyImmediate, false},
		{OpImmediateSE, false, 0, BodyImmediate, false},
		{OpAtomicRequest, false, 1, BodyAtomicRequest, false},
		{OpAtomicResponse, false, 3, BodyAtomicResponse, false},
	}
	for _, c := range cases {
		o := c.op.Info()
		if o.Tagged != c.tagged || (!c.tagged && o.QN != c.qn) || o.Body != c.body || o.Payload != c.payload {
			t.Errorf("%v: %+v", c.op, *o)
		}
	}
	if !OpSendSEInvalidate.Info().Invalidate || !OpSendSEInvalidate.Info().Solicited || OpSend.Info().Invalidate {
		t.Error("invalidate/solicited flags")
	}
	if Opcode(12).Valid() || Opcode(12).String() != "Reserved 12" || OpAtomicRequest.String() != "Atomic Request" {
		t.Error("reserved opcodes")
	}
}

// TestSegmentRoundTrip: every opcode, encoded and decoded, keeps every field
// and its payload, and re-encodes to the same bytes.
func TestSegmentRoundTrip(t *testing.T) {
	for _, op := range validOpcodes() {
		for _, n := range []int{0, 1, 2, 3, 4, 1442} {
			h := testHeaders(op)
			pay := testPayload(op, n)
			b := AppendSegment(nil, &h, pay)
			if len(b) != HeadersLen(&h)+len(pay) {
				t.Fatalf("%v: length %d", op, len(b))
			}
			var s Segment
			if err := s.Decode(b); err != nil {
				t.Fatalf("%v/%d: %v (%x)", op, n, err, b)
			}
			got := s.Headers()
			want := h
			// Only the RDMAP header the opcode has survives.
			clearUnused(&want, op)
			if got != want {
				t.Errorf("%v: headers\n got %+v\nwant %+v", op, got, want)
			}
			if !bytes.Equal(s.Payload(), pay) {
				t.Errorf("%v: payload %x", op, s.Payload())
			}
			if out := AppendSegment(nil, &got, s.Payload()); !bytes.Equal(out, b) {
				t.Errorf("%v: re-encoded differs", op)
			}
			if op == OpTerminate && s.Terminate().Code() != TermRDMAPInvalidSTag {
				t.Errorf("terminate view %v", s.Terminate().Code())
			}
		}
	}
}

func clearUnused(h *Headers, op Opcode) {
	info := op.Info()
	if info.Tagged {
		h.DDP.RsvdULP, h.DDP.QN, h.DDP.MSN, h.DDP.MO = 0, 0, 0, 0
	} else {
		h.DDP.STag, h.DDP.TO = 0, 0
	}
	if info.Body != BodyReadRequest {
		h.ReadRequest = ReadRequestFields{}
	}
	if info.Body != BodyAtomicRequest {
		h.AtomicRequest = AtomicRequestFields{}
	}
	if info.Body != BodyAtomicResponse {
		h.AtomicResponse = AtomicResponseFields{}
	}
	if info.Body != BodyImmediate {
		h.Immediate = 0
	}
}

func TestSegmentErrors(t *testing.T) {
	send := testHeaders(OpSend)
	good := AppendSegment(nil, &send, []byte("abc"))
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	rr := testHeaders(OpReadRequest)
	rrb := AppendSegment(nil, &rr, nil)
	cases := []struct {
		name string
		b    []byte
		err  Error
		term TermCode
	}{
		{"empty", nil, ErrTruncated, TermRDMAPOpUnspecified},
		{"DV 2 untagged", mod(func(b []byte) []byte { b[0] = b[0]&^3 | 2; return b }), ErrDDPVersionUntagged, TermDDPUntaggedVersion},
		{"DV 0 tagged", []byte{0xC0, 0x40}, ErrDDPVersionTagged, TermDDPTaggedVersion},
		{"short untagged", good[:17], ErrTruncated, TermRDMAPOpUnspecified},
		{"RV 0", mod(func(b []byte) []byte { b[1] &^= 0xC0; return b }), ErrRDMAPVersion, TermRDMAPVersion},
		{"RV 3", mod(func(b []byte) []byte { b[1] |= 0xC0; return b }), ErrRDMAPVersion, TermRDMAPVersion},
		{"reserved opcode", mod(func(b []byte) []byte { b[1] = b[1]&^0x0F | 13; return b }), ErrBadOpcode, TermRDMAPUnexpectedOpcode},
		{"tagged Send", mod(func(b []byte) []byte { b[0] |= 0x80; return b }), ErrBadOpcode, TermRDMAPUnexpectedOpcode},
		{"Send on QN 1", mod(func(b []byte) []byte { b[9] = 1; return b }), ErrBadQN, TermDDPUntaggedInvalidQN},
		{"Read Request short", rrb[:len(rrb)-1], ErrTruncated, TermRDMAPOpUnspecified},
		{"Read Request long", append(rrb, 0), ErrBadLength, TermRDMAPOpUnspecified},
	}
	for _, c := range cases {
		var s Segment
		err := s.Decode(c.b)
		if err != c.err {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
			continue
		}
		if tc, ok := c.err.Terminate(); !ok || tc != c.term {
			t.Errorf("%s: terminate %v, want %v", c.name, tc, c.term)
		}
	}
	// Reserved bits are not checked on receive, and survive a round trip.
	b := mod(func(b []byte) []byte { b[0] |= 0x3C; b[1] |= 0x30; return b })
	var s Segment
	if err := s.Decode(b); err != nil {
		t.Fatal(err)
	}
	h := s.Headers()
	if h.DDP.DDPReserved != 0xF || h.DDP.RDMAPReserved != 3 || !bytes.Equal(AppendSegment(nil, &h, s.Payload()), b) {
		t.Errorf("reserved bits: %+v", h.DDP)
	}
}

func TestErrors(t *testing.T) {
	for e := Error(1); int(e) < NumErrors; e++ {
		if e.Counter() == "unknown" || e.Error() == "iwarp: unknown error" {
			t.Errorf("error %d has no name", e)
		}
		tc, ok := e.Terminate()
		if ok != (e != ErrIncomplete) || ok && !tc.Known() {
			t.Errorf("%v: terminate %v %v", e, tc, ok)
		}
	}
	if Error(200).Counter() != "unknown" {
		t.Error("out of range")
	}
}
