package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/roce/wire"
)

// cleanSummary matches a summary line with nothing bad and nothing unknown.
var cleanSummary = regexp.MustCompile(`(?m)^summary: frames=\d+ roce=\d+ icrc_bad=0 iwarp=\d+ crc_bad=0 unknown=0\n\z`)

// summaryCount returns the value of key in the summary (last) line.
func summaryCount(t *testing.T, out, key string) int {
	t.Helper()
	for _, f := range strings.Fields(lastLine(out)) {
		if k, v, ok := strings.Cut(f, "="); ok && k == key {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in %q", key, lastLine(out))
	return 0
}

func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// checkClean decodes files and expects exit 0 with a clean summary. It
// returns the FPDUs counted over the siw captures.
func checkClean(t *testing.T, files []string) (fpdus int) {
	t.Helper()
	for _, f := range files {
		out, errOut, code := rnic(t, "decode", f)
		if code != 0 || !cleanSummary.MatchString(out) || errOut != "" {
			t.Errorf("%s: status %d, summary %q, stderr %q", f, code, lastLine(out), errOut)
		}
		switch base := filepath.Base(f); {
		case strings.HasPrefix(base, "rxe-") && summaryCount(t, out, "roce") == 0:
			t.Errorf("%s: no RoCEv2 frame found: %s", f, lastLine(out))
		case strings.HasPrefix(base, "siw-"):
			n := summaryCount(t, out, "iwarp")
			if n == 0 || strings.Count(out, " MPA Request ") == 0 || strings.Count(out, "\n") != n+1+2*strings.Count(out, " MPA Request ") {
				t.Errorf("%s: %d FPDUs, %d lines", f, n, strings.Count(out, "\n"))
			}
			fpdus += n
		}
	}
	// All at once, in JSON: every line is an object, the last the summary.
	out, _, code := rnic(t, append([]string{"decode", "--json"}, files...)...)
	if code != 0 {
		t.Errorf("--json over %d files: status %d", len(files), code)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, l := range lines {
		var v struct {
			Type    string `json:"type"`
			ICRCBad *int   `json:"icrc_bad"`
			IWARP   *int   `json:"iwarp"`
			CRCBad  *int   `json:"crc_bad"`
			Unknown *int   `json:"unknown"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %d is not JSON: %v: %q", i+1, err, l)
		}
		last := i == len(lines)-1
		if last != (v.Type == "summary") || (last && (v.ICRCBad == nil || *v.ICRCBad != 0 || v.CRCBad == nil ||
			*v.CRCBad != 0 || v.Unknown == nil || *v.Unknown != 0 || v.IWARP == nil || *v.IWARP != fpdus)) {
			t.Fatalf("line %d: %q", i+1, l)
		}
		if !last && v.Type != "roce" && v.Type != "mpa" && v.Type != "iwarp" {
			t.Fatalf("line %d: %q", i+1, l)
		}
	}
	return fpdus
}

// TestDecodeCaptures: every capture in testdata (RoCEv2 from rxe, iWARP
// from siw) decodes with no bad ICRC or CRC and nothing unknown; the siw
// ones hold the 1046 FPDUs iwarp/wire's capture test counts.
func TestDecodeCaptures(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/captures/*.pcap")
	if len(files) == 0 {
		t.Fatal("no captures in testdata/captures")
	}
	if n := checkClean(t, files); n != 1046 {
		t.Errorf("%d FPDUs in the siw captures, want 1046", n)
	}
}

// readAll returns the frames and capture infos of a pcap.
func readAll(t *testing.T, path string) ([][]byte, []gopacket.CaptureInfo) {
	t.Helper()
	r, err := decode.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var frames [][]byte
	var cis []gopacket.CaptureInfo
	for {
		b, ci, err := r.ReadFrame()
		if errors.Is(err, io.EOF) {
			return frames, cis
		}
		if err != nil {
			t.Fatal(err)
		}
		frames, cis = append(frames, bytes.Clone(b)), append(cis, ci)
	}
}

func writeAll(t *testing.T, path string, frames [][]byte, cis []gopacket.CaptureInfo) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for i := range frames {
		if err := w.WritePacket(cis[i], frames[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDecodeAlteredByte: changing one byte of a frame's ICRC-covered region
// (IP, UDP, BTH, extension header, payload, or the ICRC itself) makes that
// frame, and only it, icrc=BAD, and the command exit 1; changing a byte the
// ICRC masks (TOS, TTL, IP and UDP checksums, FECN/BECN byte) does not.
// An undecodable change makes the frame unknown, also exit 1.
func TestDecodeAlteredByte(t *testing.T) {
	src := "../../testdata/captures/rxe-read-lat-64.pcap"
	frames, cis := readAll(t, src)
	// The first RDMA READ Request (RETH) and the first READ Response Only
	// (AETH, payload).
	var targets []int
	for _, op := range []wire.Opcode{wire.RCReadRequest, wire.RCReadResponseOnly} {
		for i, b := range frames {
			var f wire.Frame
			if f.Decode(b, 0) == nil && f.Packet.Opcode() == op {
				targets = append(targets, i)
				break
			}
		}
	}
	if len(targets) != 2 {
		t.Fatalf("%s: READ request/response not found", src)
	}
	const l3, l4, bth = wire.EthLen, wire.EthLen + wire.IPv4Len, wire.EthLen + wire.IPv4Len + wire.UDPLen
	// Offsets from the frame start (negative: from the end of the IP
	// datagram), and the bits to flip so the frame still decodes.
	type change struct {
		off  int
		flip byte
	}
	covered := map[string]change{
		"ip id": {l3 + 4, 1}, "ip src": {l3 + 12, 1}, "ip dst": {l3 + 19, 1}, "udp sport": {l4 + 1, 1},
		"bth se": {bth + 1, 0x80}, "bth pkey": {bth + 3, 1}, "bth qp": {bth + 7, 1}, "bth ackreq": {bth + 8, 0x80},
		"bth psn": {bth + 11, 1}, "ext header": {bth + 13, 1}, "last before icrc": {-5, 1}, "icrc": {-1, 1},
	}
	masked := map[string]int{
		"tos": l3 + 1, "ttl": l3 + 8, "ip checksum": l3 + 10, "udp checksum": l4 + 6, "fecn/becn": bth + 4,
	}
	dir := t.TempDir()
	try := func(name string, ti, off int, flip byte) (string, int) {
		t.Helper()
		alt := make([][]byte, len(frames))
		copy(alt, frames)
		b := bytes.Clone(frames[ti])
		var f wire.Frame
		f.Decode(b, 0)
		end := len(b) - len(f.Trailer()) // Ethernet padding is not covered
		if off < 0 {
			off += end
		}
		b[off] ^= flip
		alt[ti] = b
		p := filepath.Join(dir, strings.NewReplacer(" ", "-", "/", "-").Replace(name)+".pcap")
		writeAll(t, p, alt, cis)
		out, _, code := rnic(t, "decode", p)
		return out, code
	}
	for _, ti := range targets {
		prefix := "#" + strconv.Itoa(ti+1) + " "
		for name, c := range covered {
			if name == "last before icrc" && ti == targets[0] {
				name, c = "reth dma length", change{bth + 12 + 15, 1} // a READ request has no payload
			}
			out, code := try(name, ti, c.off, c.flip)
			line := lineWith(out, prefix)
			if code != 1 || !strings.HasSuffix(line, " icrc=BAD") || !strings.HasSuffix(out, "icrc_bad=1 iwarp=0 crc_bad=0 unknown=0\n") {
				t.Errorf("frame %d, %s changed: status %d, line %q, %s", ti+1, name, code, line, lastLine(out))
			}
		}
		for name, off := range masked {
			out, code := try(name, ti, off, 0x40)
			if line := lineWith(out, prefix); code != 0 || !strings.HasSuffix(line, " icrc=ok") {
				t.Errorf("frame %d, masked %s changed: status %d, line %q", ti+1, name, code, line)
			}
		}
		out, code := try("opcode", ti, bth, frames[ti][bth]^0x40) // 0x40: RD, not supported
		if line := lineWith(out, prefix); code != 1 || !strings.Contains(line, "unknown: bad_opcode") || !strings.Contains(lastLine(out), "icrc_bad=0 iwarp=0 crc_bad=0 unknown=1") {
			t.Errorf("frame %d, opcode changed: status %d, line %q, %s", ti+1, code, line, lastLine(out))
		}
	}
}

func lineWith(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestDecodeUnreadable: a missing file, a non-capture and a capture cut in
// the middle of a record exit 2 with a message naming the file.
func TestDecodeUnreadable(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pcap")
	os.WriteFile(garbage, bytes.Repeat([]byte{0xde, 0xad}, 100), 0o644)
	raw, _ := os.ReadFile("../../testdata/captures/rxe-rc-pingpong.pcap")
	cut := filepath.Join(dir, "cut.pcap")
	os.WriteFile(cut, raw[:len(raw)/2], 0o644)
	for _, p := range []string{filepath.Join(dir, "missing.pcap"), garbage, cut} {
		out, errOut, code := rnic(t, "decode", p)
		if code != 2 || !strings.Contains(errOut, p) || !strings.HasPrefix(lastLine(out), "summary: ") {
			t.Errorf("%s: status %d, stderr %q, last line %q", filepath.Base(p), code, errOut, lastLine(out))
		}
	}
}

// tcpPayloadOff returns where the TCP payload of an Ethernet/IPv4 frame
// starts, and the IP total length.
func tcpPayloadOff(t *testing.T, b []byte) (int, int) {
	t.Helper()
	if len(b) < 54 || b[12] != 0x08 || b[13] != 0x00 || b[23] != 6 {
		t.Fatalf("not IPv4/TCP: %x", b[:min(len(b), 54)])
	}
	ihl := int(b[14]&0x0f) * 4
	return 14 + ihl + int(b[14+ihl+12]>>4)*4, int(b[16])<<8 | int(b[17])
}

// TestDecodeIWARPDamage: in the CRC capture, a changed payload octet makes
// its FPDU crc=BAD (exit 1); a TCP segment missing, a segment cut by the
// snap length, and the capture ending inside an FPDU are each one unknown
// (exit 1) and decoding goes on after them.
func TestDecodeIWARPDamage(t *testing.T) {
	src := "../../testdata/captures/siw-rping-mpacrc.pcap"
	frames, cis := readAll(t, src)
	out, _, _ := rnic(t, "decode", src)
	total := summaryCount(t, out, "iwarp")
	// The first RDMA Write: one FPDU, alone in its segment.
	wr := -1
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " RDMA Write ") {
			wr, _ = strconv.Atoi(strings.TrimPrefix(strings.Fields(l)[0], "#"))
			wr--
			break
		}
	}
	if wr < 0 {
		t.Fatal("no RDMA Write")
	}
	prefix := "#" + strconv.Itoa(wr+1) + " "
	dir := t.TempDir()
	try := func(name string, frames [][]byte, cis []gopacket.CaptureInfo) (string, int) {
		t.Helper()
		p := filepath.Join(dir, name+".pcap")
		writeAll(t, p, frames, cis)
		out, errOut, code := rnic(t, "decode", p)
		if errOut != "" {
			t.Errorf("%s: stderr %q", name, errOut)
		}
		return out, code
	}

	// A payload octet (the last before the CRC).
	alt := slices.Clone(frames)
	alt[wr] = bytes.Clone(frames[wr])
	alt[wr][len(alt[wr])-5] ^= 0x20
	out, code := try("payload", alt, cis)
	if line := lineWith(out, prefix); code != 1 || !strings.HasSuffix(line, " crc=BAD") || !strings.Contains(line, "RDMA Write") ||
		summaryCount(t, out, "crc_bad") != 1 || summaryCount(t, out, "unknown") != 0 || summaryCount(t, out, "iwarp") != total {
		t.Errorf("payload changed: status %d, line %q, %s", code, line, lastLine(out))
	}

	// The segment missing.
	out, code = try("gap", slices.Delete(slices.Clone(frames), wr, wr+1), slices.Delete(slices.Clone(cis), wr, wr+1))
	if code != 1 || !strings.Contains(out, " unknown: iwarp tcp_gap seq=") || summaryCount(t, out, "unknown") != 1 ||
		summaryCount(t, out, "iwarp") != total-1 || summaryCount(t, out, "crc_bad") != 0 {
		t.Errorf("segment missing: status %d\n%s", code, out)
	}

	// Cut by the snap length: the rest of its FPDU is missing.
	alt = slices.Clone(frames)
	acis := slices.Clone(cis)
	off, _ := tcpPayloadOff(t, frames[wr])
	alt[wr] = frames[wr][:off+10]
	acis[wr].CaptureLength = len(alt[wr])
	out, code = try("snaplen", alt, acis)
	if line := lineWith(out, prefix); code != 1 || !strings.Contains(line, " unknown: iwarp tcp_gap seq=") ||
		summaryCount(t, out, "unknown") != 1 || summaryCount(t, out, "iwarp") != total-1 {
		t.Errorf("snap length: status %d, line %q\n%s", code, line, out)
	}

	// The capture ends inside the FPDU (the segment carries only its
	// first 10 octets).
	alt = slices.Clone(frames[:wr+1])
	acis = slices.Clone(cis[:wr+1])
	b := bytes.Clone(frames[wr][:off+10])
	_, iplen := tcpPayloadOff(t, frames[wr])
	iplen -= len(frames[wr]) - len(b)
	b[16], b[17] = byte(iplen>>8), byte(iplen)
	alt[wr], acis[wr].CaptureLength, acis[wr].Length = b, len(b), len(b)
	out, code = try("truncated", alt, acis)
	if line := lineWith(out, prefix); code != 1 || !strings.HasSuffix(line, " have=10") || !strings.Contains(line, "incomplete_fpdu") ||
		summaryCount(t, out, "unknown") != 1 {
		t.Errorf("truncated: status %d, line %q\n%s", code, line, out)
	}
}
