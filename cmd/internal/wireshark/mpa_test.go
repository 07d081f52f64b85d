package wireshark

import "testing"

// fpduFrames are the frames of a capture in which Wireshark's MPA
// dissector found an FPDU.
func fpduFrames(t *testing.T, file string) []int {
	return frameNumbers(t, tshark(t, file, "iwarp_mpa.fpdu", "frame.number"))
}

// TestMPACRCOnSiwCaptures: with CRCs negotiated, every FPDU siw sent is
// good; without, every CRC is zero, reported unused, none bad.
func TestMPACRCOnSiwCaptures(t *testing.T) {
	for _, tc := range []struct{ file, status string }{
		{captures + "siw-rping-mpacrc.pcap", "good"},
		{captures + "siw-rping.pcap", "unused"},
	} {
		fpdus := fpduFrames(t, tc.file)
		if len(fpdus) < 20 {
			t.Fatalf("%s: %d FPDU frames", tc.file, len(fpdus))
		}
		equalFrames(t, tc.file+": "+tc.status, frameNumbers(t, tshark(t, tc.file, `rnic.mpa.crc.status == "`+tc.status+`"`, "frame.number")), fpdus)
		equalFrames(t, tc.file+": rnic.mpa.crc.bad", frameNumbers(t, tshark(t, tc.file, "rnic.mpa.crc.bad", "frame.number")), nil)
	}
}

// TestMPACRCFlagsAlteredFPDUs: a byte changed inside an FPDU (its DDP
// header or payload, or the CRC itself) is flagged on exactly that frame;
// on a connection that negotiated CRCs a zeroed CRC is wrong too.
func TestMPACRCFlagsAlteredFPDUs(t *testing.T) {
	file := captures + "siw-rping-mpacrc.pcap"
	fpdus := fpduFrames(t, file)
	b, frs := frames(t, file)
	var want []int
	for k, num := range fpdus {
		fr := frs[num-1]
		off, n := tcpPayload(fr)
		if off < 0 || n < 2+18+4 {
			t.Fatalf("frame %d: no FPDU in its TCP payload", num)
		}
		switch k % 4 {
		case 0: // the DDP header's queue number
			fr[off+2+6] ^= 0x01
		case 1: // the last byte before the CRC
			fr[off+n-5] ^= 0x40
		case 2: // the CRC, zeroed
			copy(fr[off+n-4:off+n], []byte{0, 0, 0, 0})
		case 3:
			continue
		}
		want = append(want, num)
	}
	altered := writeAltered(t, b)
	equalFrames(t, "rnic.mpa.crc.bad", frameNumbers(t, tshark(t, altered, "rnic.mpa.crc.bad", "frame.number")), want)
}

// TestMPACRCWithMarkers: in the mpa scenario both NICs use CRCs and
// markers; every FPDU's CRC, computed over its markers too (the one in
// front of the first FPDU included), is good, and changing a marker's
// reserved half, which the CRC covers, makes that FPDU bad.
func TestMPACRCWithMarkers(t *testing.T) {
	r, file := runScenario(t, "mpa")
	fpdus := fpduFrames(t, file)
	if len(fpdus) < 5 {
		t.Fatalf("%d FPDU frames", len(fpdus))
	}
	equalFrames(t, "good with markers", frameNumbers(t, tshark(t, file, `rnic.mpa.crc.status == "good"`, "frame.number")), fpdus)
	first := fpdus[0] // the RTR: its FPDU starts at stream offset 0, behind a marker
	fr := ngFrames(t, r.Pcap)[first-1]
	off, _ := tcpPayload(fr)
	if off < 0 || fr[off] != 0 || fr[off+1] != 0 {
		t.Fatalf("frame %d does not start with a marker", first)
	}
	fr[off+1] = 0x01 // the marker's reserved half
	altered := writeAltered(t, r.Pcap)
	equalFrames(t, "rnic.mpa.crc.bad", frameNumbers(t, tshark(t, altered, "rnic.mpa.crc.bad", "frame.number")), []int{first})
}
