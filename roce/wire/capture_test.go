package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// captureFiles returns the real rxe captures in testdata/captures.
func captureFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("../../testdata/captures/rxe-*.pcap")
	if len(files) == 0 {
		t.Fatal("no captures found in testdata/captures")
	}
	return files
}

func readFrames(t testing.TB, path string) [][]byte {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	r, err := pcapgo.NewReader(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out [][]byte
	for {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, data)
	}
}

// isRoCEUDP reports whether a frame is UDP to port 4791 over IPv4 or IPv6.
func isRoCEUDP(b []byte) bool {
	if len(b) < 14 {
		return false
	}
	l3, et := 14, binary.BigEndian.Uint16(b[12:])
	if et == EtherTypeVLAN && len(b) >= 18 {
		l3, et = 18, binary.BigEndian.Uint16(b[16:])
	}
	switch {
	case et == EtherTypeIPv4 && len(b) >= l3+20 && b[l3+9] == 17:
		l4 := l3 + int(b[l3]&0xF)*4
		return len(b) >= l4+4 && binary.BigEndian.Uint16(b[l4+2:]) == UDPPort
	case et == EtherTypeIPv6 && len(b) >= l3+44 && b[l3+6] == 17:
		return binary.BigEndian.Uint16(b[l3+42:]) == UDPPort
	}
	return false
}

// TestCaptures: every RoCEv2 frame of every real rxe capture decodes, its
// ICRC verifies, and encoding its decoded headers and payload again
// reproduces the frame byte for byte.
func TestCaptures(t *testing.T) {
	total := 0
	ops := map[Opcode]int{}
	for _, path := range captureFiles(t) {
		n := 0
		for i, b := range readFrames(t, path) {
			if !isRoCEUDP(b) {
				continue
			}
			var f Frame
			if err := f.Decode(b, 0); err != nil {
				t.Errorf("%s frame %d: %v", filepath.Base(path), i+1, err)
				continue
			}
			if !f.VerifyICRC() {
				t.Errorf("%s frame %d: ICRC %08x, computed %08x", filepath.Base(path), i+1,
					f.Packet.WireICRC(), f.ComputeICRC())
			}
			e := f.Encap()
			h := f.Packet.Headers()
			out := AppendFrame(nil, &e, &h, f.Packet.Payload())
			out = append(out, f.Trailer()...)
			if !bytes.Equal(out, b) {
				t.Errorf("%s frame %d (%v): re-encoded frame differs\n got %x\nwant %x",
					filepath.Base(path), i+1, f.Packet.Opcode(), out, b)
			}
			ops[f.Packet.Opcode()]++
			n++
		}
		if n == 0 {
			t.Errorf("%s: no RoCEv2 frames", path)
		}
		total += n
	}
	t.Logf("%d RoCEv2 frames checked; opcodes seen: %v", total, ops)
}
