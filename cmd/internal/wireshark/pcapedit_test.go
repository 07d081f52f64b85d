package wireshark

import (
	"encoding/binary"
	"os"
	"testing"
)

// frames reads a classic little-endian pcap file: its 24-byte header and
// each record's data (the slices alias the returned file bytes, so editing
// a frame edits the file).
func frames(t *testing.T, path string) ([]byte, [][]byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 24 || binary.LittleEndian.Uint32(b) != 0xa1b2c3d4 && binary.LittleEndian.Uint32(b) != 0xa1b23c4d {
		t.Fatalf("%s: not a little-endian classic pcap", path)
	}
	var out [][]byte
	for off := 24; off+16 <= len(b); {
		n := int(binary.LittleEndian.Uint32(b[off+8:]))
		if off+16+n > len(b) {
			t.Fatalf("%s: record at %d runs past the end", path, off)
		}
		out = append(out, b[off+16:off+16+n])
		off += 16 + n
	}
	return b, out
}

// ipv4 returns the offsets of the IPv4 header and of the header after it
// in an untagged Ethernet frame, or -1s.
func ipv4(fr []byte) (ip, next int) {
	if len(fr) < 34 || binary.BigEndian.Uint16(fr[12:]) != 0x0800 {
		return -1, -1
	}
	return 14, 14 + int(fr[14]&0x0F)*4
}

// isRoCE says whether fr is an IPv4 RoCEv2 frame, and where its UDP header is.
func isRoCE(fr []byte) (udp int, ok bool) {
	ip, udp := ipv4(fr)
	if ip < 0 || fr[ip+9] != 17 || len(fr) < udp+8+12+4 {
		return 0, false
	}
	return udp, binary.BigEndian.Uint16(fr[udp+2:]) == 4791
}

// tcpPayload is the offset of the TCP payload of an IPv4 frame and its
// length, or -1.
func tcpPayload(fr []byte) (int, int) {
	ip, tcp := ipv4(fr)
	if ip < 0 || fr[ip+9] != 6 || len(fr) < tcp+20 {
		return -1, 0
	}
	start := tcp + int(fr[tcp+12]>>4)*4
	end := ip + int(binary.BigEndian.Uint16(fr[ip+2:]))
	return start, end - start
}

// ngFrames returns the packet data of each Enhanced Packet Block of a
// little-endian pcapng file (the slices alias b, so editing a frame edits
// the file).
func ngFrames(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for off := 0; off+12 <= len(b); {
		typ, n := binary.LittleEndian.Uint32(b[off:]), int(binary.LittleEndian.Uint32(b[off+4:]))
		if n < 12 || off+n > len(b) {
			t.Fatalf("pcapng block at %d: length %d", off, n)
		}
		if typ == 6 { // Enhanced Packet Block: interface, timestamp, lengths, data
			capLen := int(binary.LittleEndian.Uint32(b[off+20:]))
			out = append(out, b[off+28:off+28+capLen])
		}
		off += n
	}
	return out
}
