package wire

import (
	"bytes"
	"testing"
)

// TestTerminateLikeSiw builds the three shapes of Terminate Linux siw sends
// (siw_send_terminate) and parses them back.
func TestTerminateLikeSiw(t *testing.T) {
	rr := testHeaders(OpReadRequest)
	rrSeg := AppendSegment(nil, &rr, nil)
	w := testHeaders(OpWrite)
	wSeg := AppendSegment(nil, &w, []byte("data"))
	cases := []struct {
		name    string
		f       TermFields
		ddpLen  int
		rdmaLen int
		str     string
	}{
		{"remote protection on a Read Request: M, D, R and the whole request",
			TermFields{Code: TermRDMAPInvalidSTag, M: true, D: true, R: true, DDPSegLen: uint16(len(rrSeg)),
				DDPHeader: rrSeg[:DDPUntaggedLen], RDMAPHeader: rrSeg[DDPUntaggedLen:]},
			DDPUntaggedLen, ReadRequestLen, "RDMAP, remote protection error, invalid STag"},
		{"remote protection on a Send: R with no RDMAP header",
			TermFields{Code: TermRDMAPAccessRights, M: true, D: true, R: true, DDPSegLen: 3,
				DDPHeader: rrSeg[:DDPUntaggedLen]},
			DDPUntaggedLen, 0, "RDMAP, remote protection error, access rights violation"},
		{"DDP tagged error: M, D and the DDP header",
			TermFields{Code: TermDDPTaggedBaseBounds, M: true, D: true, DDPSegLen: uint16(len(wSeg)),
				DDPHeader: wSeg[:DDPTaggedLen]},
			DDPTaggedLen, -1, "DDP, tagged buffer error, base or bounds violation"},
		{"version error: no headers",
			TermFields{Code: TermRDMAPVersion}, -1, -1, "RDMAP, remote operation error, invalid RDMAP version"},
		{"CRC error", TermFields{Code: TermLLPCRC}, -1, -1, "LLP (MPA), MPA error, MPA CRC error"},
	}
	for _, c := range cases {
		b := AppendTerminate(nil, &c.f)
		if len(b) != TermLen(&c.f) {
			t.Errorf("%s: TermLen %d, wrote %d", c.name, TermLen(&c.f), len(b))
		}
		tm, err := ParseTerminate(b)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if tm.Code() != c.f.Code || tm.M() != c.f.M || tm.D() != c.f.D || tm.R() != c.f.R {
			t.Errorf("%s: control %v %v %v %v", c.name, tm.Code(), tm.M(), tm.D(), tm.R())
		}
		if c.ddpLen >= 0 && (len(tm.DDPHeader()) != c.ddpLen || tm.DDPSegmentLength() != c.f.DDPSegLen) {
			t.Errorf("%s: DDP header %d octets, seg len %d", c.name, len(tm.DDPHeader()), tm.DDPSegmentLength())
		}
		if c.ddpLen < 0 && tm.DDPHeader() != nil {
			t.Errorf("%s: DDP header present", c.name)
		}
		if c.rdmaLen >= 0 && len(tm.RDMAPHeader()) != c.rdmaLen || c.rdmaLen < 0 && tm.RDMAPHeader() != nil {
			t.Errorf("%s: RDMAP header %x", c.name, tm.RDMAPHeader())
		}
		if s := tm.Code().String(); s != c.str {
			t.Errorf("%s: %q, want %q", c.name, s, c.str)
		}
		f := tm.Fields()
		if out := AppendTerminate(nil, &f); !bytes.Equal(out, b) {
			t.Errorf("%s: round trip\n got %x\nwant %x", c.name, out, b)
		}
	}
	// The offending Read Request is readable from the Terminate.
	f := cases[0].f
	tm, _ := ParseTerminate(AppendTerminate(nil, &f))
	if ReadRequest(tm.RDMAPHeader()).SinkSTag() != rr.ReadRequest.SinkSTag || tm.DDPHeader().Opcode() != OpReadRequest {
		t.Error("offending Read Request")
	}
}

func TestTerminateInvalid(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		err  error
	}{
		{"short control", []byte{0, 0, 0}, ErrTruncated},
		{"D without header", []byte{0x01, 0x00, 0x40, 0x00, 0x00, 0x10}, ErrTruncated},
		{"D with a short tagged header", append([]byte{0x01, 0x00, 0x40, 0x00, 0x00, 0x10, 0xC1}, make([]byte, 12)...), ErrTruncated},
		{"trailing octets without R", []byte{0x02, 0x05, 0x00, 0x00, 0xAA}, ErrBadLength},
	}
	for _, c := range cases {
		if _, err := ParseTerminate(c.b); err != c.err {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
}

func TestTermCodeStrings(t *testing.T) {
	cases := map[TermCode]string{
		TermDDPUntaggedMSNRange:           "DDP, untagged buffer error, invalid MSN, MSN range is not valid",
		TermLLPNoMatchingRTR:              "LLP (MPA), MPA error, no matching RTR option",
		MakeTermCode(LayerRDMAP, 2, 0x0A): "RDMAP, remote operation error, error code 0x0a",
		MakeTermCode(5, 7, 1):             "layer 5, error type 7, error code 0x01",
	}
	for c, want := range cases {
		if got := c.String(); got != want {
			t.Errorf("%#04x: %q, want %q", uint16(c), got, want)
		}
	}
	c := MakeTermCode(LayerDDP, ETypeDDPUntagged, 0x05)
	if c != TermDDPUntaggedTooLong || c.Layer() != LayerDDP || c.EType() != 2 || c.ErrCode() != 5 {
		t.Errorf("MakeTermCode %#x", uint16(c))
	}
}
