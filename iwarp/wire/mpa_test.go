package wire

import (
	"bytes"
	"errors"
	"testing"
)

// siw's MPA Request of siw-rping-mpacrc: C and S set, Rev 2, IRD 1, ORD 1.
const siwRequest = "4d504120494420526571204672616d655002000400010001"

func TestMPAFrameSiw(t *testing.T) {
	b := mustHex(t, siwRequest)
	f, n, err := ParseMPAFrame(append(b, 0x00, 0x22)) // an FPDU follows
	if err != nil || n != len(b) {
		t.Fatalf("ParseMPAFrame = %d, %v", n, err)
	}
	if f.IsReply() || !f.CRC() || f.Markers() || f.Reject() || !f.Enhanced() || f.Rev() != 2 || f.Reserved() != 0 {
		t.Errorf("flags: %+v", f.Fields())
	}
	if v := f.IRDORD(); v != (IRDORD{IRD: 1, ORD: 1}) {
		t.Errorf("IRDORD = %+v", v)
	}
	if len(f.ULPPrivateData()) != 0 || f.PDLength() != 4 {
		t.Errorf("private data %x", f.PrivateData())
	}
	fl := f.Fields()
	out, err := AppendMPAFrame(nil, &fl)
	if err != nil || !bytes.Equal(out, b) {
		t.Errorf("re-encoded %x, %v", out, err)
	}
}

func TestMPAFrameIncremental(t *testing.T) {
	fl := MPAFields{Reply: true, CRC: true, Enhanced: true, Rev: 2,
		IRDORD:      IRDORD{IRD: 0x3FFF, ORD: 5, PeerToPeer: true, WriteRTR: true},
		PrivateData: []byte("rdma_cm private data")}
	b, err := AppendMPAFrame(nil, &fl)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(b); i++ {
		if _, n, err := ParseMPAFrame(b[:i]); err != ErrIncomplete || n != 0 {
			t.Fatalf("prefix %d: %d, %v; want ErrIncomplete", i, n, err)
		}
	}
	f, n, err := ParseMPAFrame(b)
	if err != nil || n != len(b) {
		t.Fatalf("whole: %d, %v", n, err)
	}
	got := f.Fields()
	if got.IRDORD != fl.IRDORD || string(got.PrivateData) != string(fl.PrivateData) || !got.Reply {
		t.Errorf("round trip %+v", got)
	}
	// The IRD/ORD words on the wire: A|B|IRD, C|D|ORD.
	if w := b[MPAHeaderLen : MPAHeaderLen+4]; !bytes.Equal(w, []byte{0xBF, 0xFF, 0x80, 0x05}) {
		t.Errorf("IRD/ORD words %x", w)
	}
}

func TestMPAFrameInvalid(t *testing.T) {
	ok := mustHex(t, siwRequest)
	cases := []struct {
		name string
		b    []byte
		err  error
	}{
		{"bad key early", []byte("MPA ID X"), ErrMPABadKey},
		{"not MPA", []byte("GET / HTTP/1.1\r\n"), ErrMPABadKey},
		{"lower case", []byte("mpa id req frame\x00\x01\x00\x00"), ErrMPABadKey},
		{"PD 513", append(append([]byte(MPAKeyRequest), 0x00, 0x01, 0x02, 0x01), make([]byte, 513)...), ErrMPAPrivateData},
		{"enhanced without IRD/ORD", append([]byte(MPAKeyReply), 0x10, 0x02, 0x00, 0x02, 0, 0), ErrMPAEnhanced},
		{"empty", nil, ErrIncomplete},
	}
	for _, c := range cases {
		if _, _, err := ParseMPAFrame(c.b); err != c.err {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
	// 512 octets of private data are allowed; the reserved bits and an
	// unknown revision are reported, not rejected; S with Rev 1 is a
	// reserved bit and does not claim the private data.
	b := append(append([]byte(MPAKeyRequest), 0x1F, 0x01, 0x02, 0x00), make([]byte, 512)...)
	f, n, err := ParseMPAFrame(b)
	if err != nil || n != len(b) || f.Reserved() != 0x0F || f.HasIRDORD() || len(f.ULPPrivateData()) != 512 {
		t.Errorf("512 octets: %d, %v, reserved %x", n, err, f.Reserved())
	}
	if _, _, err := ParseMPAFrame(ok[:len(ok)-1]); err != ErrIncomplete {
		t.Errorf("short: %v", err)
	}
	if _, err := AppendMPAFrame(nil, &MPAFields{Enhanced: true, Rev: 2, PrivateData: make([]byte, 509)}); !errors.Is(err, ErrMPAPrivateData) {
		t.Errorf("AppendMPAFrame 513: %v", err)
	}
}

func TestNegotiate(t *testing.T) {
	frame := func(reply, m, c bool) MPAFrame {
		b, _ := AppendMPAFrame(nil, &MPAFields{Reply: reply, Markers: m, CRC: c, Rev: 1})
		return MPAFrame(b)
	}
	// The initiator asks for markers: the responder sends them; CRC
	// from either side applies to both.
	i2r, r2i := Negotiate(frame(false, true, false), frame(true, false, true))
	if i2r != (Framing{CRC: true}) || r2i != (Framing{CRC: true, Markers: true}) {
		t.Errorf("got %+v %+v", i2r, r2i)
	}
}
