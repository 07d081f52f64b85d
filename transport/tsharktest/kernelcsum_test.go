package tsharktest

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// tcpSumZero is an Ethernet frame holding a TCP segment from src whose
// checksum is computed as 0 and written as 0xFFFF, as Linux writes it
// (skb_checksum_help): the last two payload bytes are chosen so that the
// segment and its pseudo-header sum to 0xFFFF.
func tcpSumZero(t *testing.T, src string) []byte {
	t.Helper()
	f := make([]byte, header.EthernetMinimumSize+header.IPv4MinimumSize+header.TCPMinimumSize+8)
	header.Ethernet(f).Encode(&header.EthernetFields{SrcAddr: "\x02\x00\x00\x00\x00\x01",
		DstAddr: "\x02\x00\x00\x00\x00\x02", Type: header.IPv4ProtocolNumber})
	s := tcpip.AddrFrom4(netip.MustParseAddr(src).As4())
	d := tcpip.AddrFrom4([4]byte{10, 0, 0, 9})
	ip := header.IPv4(f[header.EthernetMinimumSize:])
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(ip)), TTL: 64, Protocol: uint8(header.TCPProtocolNumber),
		SrcAddr: s, DstAddr: d})
	ip.SetChecksum(^ip.CalculateChecksum())
	tcp := header.TCP(ip[header.IPv4MinimumSize:])
	tcp.Encode(&header.TCPFields{SrcPort: 40000, DstPort: 50000, SeqNum: 1, AckNum: 1,
		DataOffset: header.TCPMinimumSize, Flags: header.TCPFlagAck | header.TCPFlagPsh, WindowSize: 1000})
	copy(tcp.Payload(), "abcdef")
	pseudo := header.PseudoHeaderChecksum(header.TCPProtocolNumber, s, d, uint16(len(tcp)))
	binary.BigEndian.PutUint16(tcp[len(tcp)-2:], 0xFFFF-checksum.Checksum(tcp, pseudo))
	if got := checksum.Checksum(tcp, pseudo); got != 0xFFFF {
		t.Fatalf("segment sums to %#x, want 0xffff", got)
	}
	tcp.SetChecksum(0xFFFF) // 0 would be RFC 1624's choice
	return f
}

// TestKernelChecksums: tshark warns of a TCP checksum of 0xFFFF where it
// computes 0, and the oracle reports it, unless Options.KernelChecksums
// selects the segment (Linux writes 0 that way); only the segments it
// selects are excused.
func TestKernelChecksums(t *testing.T) {
	p := WritePcap(t, "ffff.pcap", [][]byte{tcpSumZero(t, "10.0.0.1"), tcpSumZero(t, "10.0.0.2")})
	for _, c := range []struct {
		filter string
		want   []int // frames reported
	}{
		{"", []int{1, 2}},
		{"ip.src == 10.0.0.1", []int{2}},
		{"ip.src == 10.0.0.1 || ip.src == 10.0.0.2", nil},
	} {
		o := Options{KernelChecksums: c.filter}
		var found []int
		for _, f := range Findings(t, p, o) {
			found = append(found, f.Frame)
			if !strings.Contains(strings.Join(f.Messages, ";"), "RFC 1624") {
				t.Errorf("filter %q: frame %d: %q, want the RFC 1624 warning", c.filter, f.Frame, f.Messages)
			}
		}
		if !slices.Equal(found, c.want) {
			t.Errorf("filter %q: Findings reports frames %v, want %v", c.filter, found, c.want)
		}
		r := &recorder{TB: t}
		Check(r, p, o)
		if len(r.errs) != len(c.want) {
			t.Errorf("filter %q: Check reported %q, want frames %v", c.filter, r.errs, c.want)
		}
	}
}
