package decode

import (
	"path/filepath"
	"strings"
	"testing"
)

// siwFPDUs is how many FPDUs iwarp/wire's TestCaptures finds in each siw
// capture (1046 over 16 connections in all).
var siwFPDUs = map[string]int{
	"siw-read-bw-4096-mpacrc.pcap": 112,
	"siw-read-bw-4096.pcap":        112,
	"siw-rping-mpacrc.pcap":        70,
	"siw-rping.pcap":               70,
	"siw-send-bw-4096.pcap":        86,
	"siw-send-lat-64.pcap":         122,
	"siw-write-bw-4096.pcap":       92,
	"siw-write-bw-65536.pcap":      262,
	"siw-write-lat-64.pcap":        120,
}

// TestCaptures: every FPDU of every siw capture is found and decodes, with
// its CRC verified where CRCs were negotiated; nothing is unknown; the
// counts are iwarp/wire's. Each connection shows its MPA Request and Reply.
func TestCaptures(t *testing.T) {
	files := captureFiles(t)
	total, conns := 0, 0
	for _, path := range files {
		name := filepath.Base(path)
		res := decodeFrames(readPcap(t, path))
		want, ok := siwFPDUs[name]
		if !ok {
			t.Errorf("%s: a capture this test does not know", name)
		}
		if res.fpdus != want || res.unknowns != 0 || res.crcBad != 0 || res.mpa%2 != 0 || res.mpa == 0 {
			t.Errorf("%s: %d FPDUs (want %d), %d MPA frames, crc_bad %d, unknown %d %v",
				name, res.fpdus, want, res.mpa, res.crcBad, res.unknowns, res.reasons)
		}
		crc := " crc=off"
		if strings.Contains(name, "-mpacrc") {
			crc = " crc=ok"
		}
		for _, l := range res.lines {
			if !strings.Contains(l, " MPA Re") && !strings.HasSuffix(l, crc) {
				t.Errorf("%s: %s", name, l)
			}
		}
		total += res.fpdus
		conns += res.mpa / 2
	}
	t.Logf("%d FPDUs over %d connections in %d captures", total, conns, len(files))
	if total != 1046 || conns != 16 || len(files) != 9 {
		t.Errorf("%d FPDUs over %d connections in %d captures, want 1046 over 16 in 9", total, conns, len(files))
	}
}

// TestCaptureSegmentation: re-cutting a real capture's streams (every
// segment split in two, or delivered with its successor first, or twice)
// changes nothing but frame numbers.
func TestCaptureSegmentation(t *testing.T) {
	path := "../../testdata/captures/siw-rping-mpacrc.pcap"
	frames := readPcap(t, path)
	want := bareLines(decodeFrames(frames).lines)
	for name, f := range map[string]func([][]byte) [][]byte{
		"split":     splitSegments,
		"swapped":   swapSegments,
		"duplicate": duplicateSegments,
	} {
		got := decodeFrames(f(frames))
		if g := bareLines(got.lines); strings.Join(g, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: got\n%s\nwant\n%s", name, strings.Join(g, "\n"), strings.Join(want, "\n"))
		}
	}
}

func bareLines(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = bare(l)
	}
	return out
}

// retcp rebuilds a TCP frame with another payload and sequence number.
func retcp(f []byte, seqDelta uint32, p []byte) []byte {
	s, _ := parseTCP(f)
	return tcpFrame(s.src, s.dst, s.seq+seqDelta, s.ack, s.flags, p, s.vlan)
}

func splitSegments(frames [][]byte) [][]byte {
	var out [][]byte
	for _, f := range frames {
		s, ok := parseTCP(f)
		if !ok || len(s.payload) < 2 {
			out = append(out, f)
			continue
		}
		h := len(s.payload) / 2
		out = append(out, retcp(f, 0, s.payload[:h]), retcp(f, uint32(h), s.payload[h:]))
	}
	return out
}

func swapSegments(frames [][]byte) [][]byte {
	out := append([][]byte(nil), frames...)
	for i := 0; i+1 < len(out); i++ {
		a, okA := parseTCP(out[i])
		b, okB := parseTCP(out[i+1])
		if okA && okB && len(a.payload) > 0 && len(b.payload) > 0 && a.src == b.src && a.flags&tcpSYN == 0 {
			out[i], out[i+1] = out[i+1], out[i]
			i++
		}
	}
	return out
}

func duplicateSegments(frames [][]byte) [][]byte {
	var out [][]byte
	for _, f := range frames {
		out = append(out, f)
		if s, ok := parseTCP(f); ok && len(s.payload) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// BenchmarkDecoder decodes a real capture: frames/s and allocations.
func BenchmarkDecoder(b *testing.B) {
	frames := readPcap(b, "../../testdata/captures/siw-rping-mpacrc.pcap")
	var line []byte
	emit := func(r *Record) { line = AppendText(line[:0], r) }
	b.ReportAllocs()
	for b.Loop() {
		d := New()
		for i, f := range frames {
			d.Frame(f, i+1, 0, emit)
		}
		d.Flush(emit)
	}
	b.ReportMetric(float64(len(frames))*float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}
