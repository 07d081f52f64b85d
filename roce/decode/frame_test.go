package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	iwdecode "github.com/rnic/rnic/iwarp/decode"
	"github.com/rnic/rnic/roce/wire"
)

func TestDecodeFrameKinds(t *testing.T) {
	e := encap(false, false, 1)
	h := wire.Headers{BTH: wire.BTHFields{Opcode: wire.RCSendOnly, PKey: wire.DefaultPKey, DestQP: 0x11, PSN: 7}}
	good := wire.AppendFrame(nil, &e, &h, []byte("abc"))
	mut := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	bth := wire.EthLen + wire.IPv4Len + wire.UDPLen
	e6 := encap(true, true, 2)
	v6 := wire.AppendFrame(nil, &e6, &h, []byte("abc"))
	for _, c := range []struct {
		name string
		b    []byte
		kind Kind
		err  wire.Error
		icrc bool
	}{
		{"good", good, KindRoCE, 0, true},
		{"vlan ipv6", v6, KindRoCE, 0, true},
		{"bad icrc", mut(func(b []byte) { b[len(b)-1] ^= 1 }), KindRoCE, 0, false},
		{"masked ttl", mut(func(b []byte) { b[wire.EthLen+8] = 1 }), KindRoCE, 0, true},
		{"empty", nil, KindOther, 0, false},
		{"runt", good[:10], KindOther, 0, false},
		{"tcp", mut(func(b []byte) { b[wire.EthLen+9] = 6 }), KindOther, 0, false},
		{"other port", mut(func(b []byte) { b[wire.EthLen+wire.IPv4Len+3] = 0x35 }), KindOther, 0, false},
		{"bad opcode", mut(func(b []byte) { b[bth] = 0x40 }), KindUnknown, wire.ErrBadOpcode, false},
		{"bad tver", mut(func(b []byte) { b[bth+1] |= 1 }), KindUnknown, wire.ErrBadTVer, false},
		{"udp length", mut(func(b []byte) { b[wire.EthLen+wire.IPv4Len+5]++ }), KindUnknown, wire.ErrBadUDPLength, false},
		{"cut in bth", good[:bth+4], KindUnknown, wire.ErrTruncated, false},
	} {
		r := DecodeFrame(c.b, 0)
		if r.Kind != c.kind || r.Err != c.err || (c.kind == KindRoCE && r.ICRCOK != c.icrc) {
			t.Errorf("%s: kind %d err %v icrc %v; want kind %d err %v icrc %v", c.name, r.Kind, r.Err, r.ICRCOK, c.kind, c.err, c.icrc)
		}
	}
	r := DecodeFrame(v6, 0)
	if r.VLAN != 100+2%3 || r.Src != netip.MustParseAddrPort("[fd00::1]:49154") {
		t.Errorf("vlan ipv6: vlan %d src %v", r.VLAN, r.Src)
	}
	// Another RoCEv2 port.
	e.DstPort = 4792
	if r := DecodeFrame(wire.AppendFrame(nil, &e, &h, nil), 4792); r.Kind != KindRoCE || !r.ICRCOK {
		t.Errorf("port 4792: kind %d icrc %v", r.Kind, r.ICRCOK)
	}
}

// fuzzFrameSeeds are the synthetic frames and a few real ones.
func fuzzFrameSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, fr := range synthFrames(f) {
		seeds = append(seeds, fr.data)
	}
	files, _ := filepath.Glob("../../testdata/captures/*.pcap")
	for _, p := range files {
		r, err := Open(p)
		if err != nil {
			f.Fatal(err)
		}
		for i := 0; i < 30; i++ {
			data, _, err := r.ReadFrame()
			if err != nil {
				break
			}
			if i%5 == 0 {
				seeds = append(seeds, bytes.Clone(data))
			}
		}
		r.Close()
	}
	return seeds
}

// FuzzFrame: the per-frame path (classification, decoding, ICRC, text and
// JSON formatting) never panics, the JSON is valid, and exactly the frames
// classified RoCEv2 or unknown produce output.
func FuzzFrame(f *testing.F) {
	for _, s := range fuzzFrameSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := DecodeFrame(data, 0)
		r.Index, r.Len = 1, len(data)+3
		text := AppendText(nil, &r)
		js, err := AppendJSON(nil, "f.pcap", &r)
		if err != nil {
			t.Fatal(err)
		}
		if (len(text) > 0) != (r.Kind != KindOther) || (len(js) > 0) != (r.Kind != KindOther) {
			t.Fatalf("kind %d but text %q json %q", r.Kind, text, js)
		}
		if len(js) > 0 && !json.Valid(js) {
			t.Fatalf("invalid JSON %s", js)
		}
		if bytes.IndexByte(text, '\n') >= 0 {
			t.Fatalf("newline in line %q", text)
		}
		if r.Kind == KindRoCE && !bytes.HasSuffix(text, []byte(" icrc=ok")) && !bytes.HasSuffix(text, []byte(" icrc=BAD")) {
			t.Fatalf("RoCEv2 line without verdict: %q", text)
		}
	})
}

// FuzzCapture: reading arbitrary bytes as a capture file never panics and
// ends in io.EOF or an ErrFormat error; decoding its frames, RoCEv2 and
// iWARP, never panics either.
func FuzzCapture(f *testing.F) {
	for _, p := range []string{"../../testdata/captures/rxe-rc-pingpong.pcap", "../../testdata/captures/siw-rping.pcap"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 600)])
	}
	f.Add([]byte("\x0a\x0d\x0d\x0a"))
	f.Fuzz(func(t *testing.T, data []byte) {
		iw := iwdecode.New()
		emit := func(r *iwdecode.Record) {
			iwdecode.AppendText(nil, r)
			if _, err := iwdecode.AppendJSON(nil, "", r); err != nil {
				t.Fatal(err)
			}
		}
		defer iw.Flush(emit)
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("open: %v is not ErrFormat", err)
			}
			return
		}
		for range 1000 {
			frame, _, err := r.ReadFrame()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("read: %v is not ErrFormat", err)
				}
				if !strings.Contains(err.Error(), "frame ") {
					t.Fatalf("read error %q does not name the frame", err)
				}
				return
			}
			rec := DecodeFrame(frame, 0)
			AppendText(nil, &rec)
			iw.Frame(frame, 1, 0, emit)
		}
	})
}
