package wireshark

import "testing"

// TestICRCGoodOnRxeCaptures: every RoCEv2 frame Linux rxe sent has a good
// ICRC, and the plugin says so for each one (none left unchecked).
func TestICRCGoodOnRxeCaptures(t *testing.T) {
	for _, c := range []string{"rxe-rping.pcap", "rxe-atomic-cmpswap.pcap", "rxe-rc-pingpong.pcap",
		"rxe-read-lat-64.pcap", "rxe-send-bw-ud-1024.pcap"} {
		_, frs := frames(t, captures+c)
		var roce []int
		for i, fr := range frs {
			if _, ok := isRoCE(fr); ok {
				roce = append(roce, i+1)
			}
		}
		if len(roce) == 0 {
			t.Fatalf("%s: no RoCEv2 frames", c)
		}
		equalFrames(t, c+": good ICRC", frameNumbers(t, tshark(t, captures+c, `rnic.icrc.status == "good"`, "frame.number")), roce)
		equalFrames(t, c+": rnic.icrc.bad", frameNumbers(t, tshark(t, captures+c, "rnic.icrc.bad", "frame.number")), nil)
	}
}

// TestICRCFlagsAlteredFrames: in a copy of an rxe capture, a changed byte
// that the ICRC covers (payload, BTH, IP address) is flagged on exactly
// that frame, while a change to a field routers may rewrite (TTL, TOS, UDP
// checksum, FECN/BECN), which the ICRC masks, is not.
func TestICRCFlagsAlteredFrames(t *testing.T) {
	b, frs := frames(t, captures+"rxe-rping.pcap")
	var want []int
	n := 0
	for i, fr := range frs {
		udp, ok := isRoCE(fr)
		if !ok {
			continue
		}
		n++
		switch n % 5 {
		case 1: // a covered byte: the last byte before the ICRC
			fr[udp+int(fr[udp+4])<<8+int(fr[udp+5])-5] ^= 0x01
			want = append(want, i+1)
		case 2: // the PSN
			fr[udp+8+11] ^= 0x80
			want = append(want, i+1)
		case 3: // the source address
			fr[14+12] ^= 0x02
			want = append(want, i+1)
		case 4: // masked: TTL, TOS, UDP checksum, FECN and BECN
			fr[14+8]--
			fr[14+1] ^= 0xFC
			fr[udp+6], fr[udp+7] = 0x12, 0x34
			fr[udp+8+4] ^= 0xC0
		}
	}
	altered := writeAltered(t, b)
	equalFrames(t, "rnic.icrc.bad", frameNumbers(t, tshark(t, altered, "rnic.icrc.bad", "frame.number")), want)
	if len(want) < 10 {
		t.Fatalf("only %d frames altered", len(want))
	}
}
