package conform

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/iwarp/wire"
)

// TestTermControlFromLE: the words siw puts on the wire (lab captures of
// Linux 6.1) read as the RFC lays them out once moved: a DDP tagged
// error with M and D, an RDMAP version error without headers, an LLP
// code.
func TestTermControlFromLE(t *testing.T) {
	for _, tc := range []struct{ siw, rfc []byte }{
		{[]byte{0x11, 0x00, 0x03, 0x00}, []byte{0x11, 0x00, 0xC0, 0x00}}, // DDP tagged, invalid STag, M D
		{[]byte{0x20, 0x05, 0x00, 0x00}, []byte{0x02, 0x05, 0x00, 0x00}}, // RDMAP remote operation, version
		{[]byte{0x02, 0x07, 0x00, 0x00}, []byte{0x20, 0x07, 0x00, 0x00}}, // LLP, no matching RTR
		{[]byte{0x10, 0x00, 0x07, 0x00}, []byte{0x01, 0x00, 0xE0, 0x00}}, // RDMAP remote protection, M D R
		{[]byte{0x21, 0x03, 0x0B, 0xFF}, []byte{0x12, 0x03, 0xDF, 0xE1}}, // reserved bits carried across
	} {
		c := bytes.Clone(tc.siw)
		termControlFromLE(c)
		if !bytes.Equal(c, tc.rfc) {
			t.Errorf("% x read as a bitfield: % x, want % x", tc.siw, c, tc.rfc)
		}
		termControlToLE(c)
		if !bytes.Equal(c, tc.siw) {
			t.Errorf("% x and back: % x", tc.siw, c)
		}
	}
}

// FuzzTermControlLE: the two layouts map onto each other one to one, and
// reading any FPDU as the bitfield layout neither panics nor changes the
// frame it reads.
func FuzzTermControlLE(f *testing.F) {
	f.Add([]byte{0x41, 0x47, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x11, 0x00, 0x03, 0x00, 0, 8, 0xC1, 0x40})
	f.Add([]byte{0x20, 0x05, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= 4 {
			c := bytes.Clone(b[:4])
			termControlFromLE(c)
			termControlToLE(c)
			if !bytes.Equal(c, b[:4]) {
				t.Fatalf("% x: from and back gives % x", b[:4], c)
			}
		}
		fr := (&iwport.Frame{Frame: 1}).Redecode(bytes.Clone(b))
		before := bytes.Clone(fr.ULPDU)
		if alt, ok := termAsLE(fr); ok && (alt.Term == nil || alt.Err != nil) {
			t.Fatalf("termAsLE ok without a decoded Terminate: %+v", alt)
		}
		if !bytes.Equal(fr.ULPDU, before) {
			t.Fatal("termAsLE changed the frame it read")
		}
	})
}

// TestTerminateLayoutJudged runs cases that provoke a Terminate against
// rnic laying its Terminate Control out as siw does: each case is judged
// on its own rule (it passes) with the layout beside it as a finding
// that quotes the bytes, and RFC5040-4.8/term-control alone FAILs.
// Plainly, no case finds anything.
func TestTerminateLayoutJudged(t *testing.T) {
	d, err := StartSelfIWARP(SelfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg, err := d.Config()
	if err != nil {
		t.Fatal(err)
	}
	asSIW := iwBreak("lays its Terminate Control out as siw", iwTermAsLE())
	for _, id := range []string{"RFC5041-7.2/tagged-stag", "RFC5040-4.1/rdmap-version", "RFC5040-4.8/term-header", "RFC5040-4.8/term-control"} {
		cs := Cases(IWARP, "="+id)
		if len(cs) != 1 {
			t.Fatalf("%s: %d cases", id, len(cs))
		}
		c := cs[0]
		plain := RunCase(cfg, c, false)
		if plain.Verdict != Pass || len(plain.Findings) != 0 {
			t.Errorf("%s plain: %s %s, findings %+v", id, plain.Verdict, plain.Detail, plain.Findings)
		}
		c.Break = asSIW
		res := RunCase(cfg, c, true)
		if id == "RFC5040-4.8/term-control" {
			if res.Verdict != Fail || !strings.Contains(res.Detail, "little-endian bitfield") {
				t.Errorf("%s as siw: %s %s, want FAIL naming the layout", id, res.Verdict, res.Detail)
			}
			continue
		}
		if res.Verdict != Pass {
			t.Errorf("%s as siw: %s %s [%s], want pass on its own rule", id, res.Verdict, res.Detail, res.Evidence)
		}
		if len(res.Findings) != 1 || res.Findings[0].Cause != CauseTermLayout || !strings.Contains(res.Findings[0].Evidence, "control ") {
			t.Errorf("%s as siw: findings %+v, want one %s with the bytes", id, res.Findings, CauseTermLayout)
		}
		t.Logf("%s as siw: %s; %+v", id, res.Verdict, res.Findings)
	}
}

// TestTerminateUndecodable: a Terminate that neither layout reads (D set,
// no header behind it) leaves the case could-not-run, not FAIL: the
// DUT's reply did not parse.
func TestTerminateUndecodable(t *testing.T) {
	d, err := StartSelfIWARP(SelfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg, err := d.Config()
	if err != nil {
		t.Fatal(err)
	}
	c := Cases(IWARP, "=RFC5041-7.2/tagged-stag")[0]
	garble := iwTermNoHeaders()
	c.Break = iwBreak("sends a Terminate whose D flag has no header behind it", func(u *iwport.Unit) [][]byte {
		out := garble(u)
		if u.MPA || u.Dir != iwport.Out || u.Opcode() != wire.OpTerminate {
			return out
		}
		fpdu := out[0]
		fpdu[2+wire.DDPUntaggedLen+2] = 0x42 // after ULPDU_Length and the DDP header: D both ways
		iwport.FixCRC(fpdu)
		return out
	})
	res := RunCase(cfg, c, true)
	if res.Verdict != CouldNotRun || !strings.Contains(res.Detail, "does not decode") {
		t.Errorf("%s, %s [%s], want could-not-run: does not decode", res.Verdict, res.Detail, res.Evidence)
	}
}
