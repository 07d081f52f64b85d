// Tests of receive checksum offload: TCP frames the kernel vouched for
// (NEEDS_CSUM, DATA_VALID) reach netstack unchecked, everything else is
// still verified, and the capture shows finished checksums.

package tap

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/rnic/rnic/transport/pcap"
)

// tcpSeg4 is a TCP/IPv4 frame from peer4 port sport to host4 port 6000
// with a payload (of at least 6 bytes: no Ethernet padding) and a correct
// checksum.
func tcpSeg4(t testing.TB, sport uint16, payload []byte) []byte {
	ip := ip4(peer4, host4, layers.IPProtocolTCP)
	tcp := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: 6000, Seq: 1, SYN: true, Window: 1000}
	tcp.SetNetworkLayerForChecksum(ip)
	return serialize(t, eth(peerMAC, hostMAC, layers.EthernetTypeIPv4), ip, tcp, gopacket.Payload(payload))
}

// corruptTCPChecksum returns frame with its TCP checksum wrong.
func corruptTCPChecksum(frame []byte) []byte {
	f := bytes.Clone(frame)
	f[ethHeaderLen+ipv4HeaderLen+tcpChecksumOffset] ^= 0x5a
	return f
}

// rxCsumNIC is a Host on a vnetFake with a TCPStack behind it, wired as
// tapnic wires them, and a listener on host4:6000 for the segments to
// reach.
func rxCsumNIC(t *testing.T, cfg func(*HostConfig)) (*Host, *TCPStack) {
	t.Helper()
	hc := HostConfig{IO: &vnetFake{writes: make(chan vnetWrite, 64)}, MAC: hostMAC,
		Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.1/24"), netip.MustParsePrefix("2001:db8::1/64")}}
	if cfg != nil {
		cfg(&hc)
	}
	h, err := NewHost(hc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewTCPStack(TCPStackConfig{Prefixes: hc.Prefixes, Output: func([]byte) error { return nil }})
	if err != nil {
		h.Close()
		t.Fatal(err)
	}
	h.SetTCP(s.Deliver)
	h.SetTCPValidated(s.DeliverValidated)
	l, err := s.Listen(netip.AddrPortFrom(host4, 6000))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		s.Close()
		h.Close()
	})
	return h, s
}

// tcpCounts is netstack's count of segments it took and of those it
// dropped for a bad checksum (both counted as the packet is delivered).
func tcpCounts(s *TCPStack) (valid, badCsum uint64) {
	st := s.Stack().Stats().TCP
	return st.ValidSegmentsReceived.Value(), st.ChecksumErrors.Value()
}

// TestRxChecksumOffload: a frame with a wrong TCP checksum and no flag is
// dropped by netstack (its checksum error counter); the same frame with
// DATA_VALID is taken; a NEEDS_CSUM frame, its checksum only the
// pseudo-header sum, is taken without being finished. A RoCEv2 frame with
// NEEDS_CSUM is still finished.
func TestRxChecksumOffload(t *testing.T) {
	h, s := rxCsumNIC(t, nil)
	good := tcpSeg4(t, 5001, []byte("payload"))
	bad := corruptTCPChecksum(good)
	ip := good[ethHeaderLen:]
	pv, pf := partial(good, ethHeaderLen+ipv4HeaderLen, tcpChecksumOffset, pseudoSum4(ip, ipProtoTCP, len(ip)-ipv4HeaderLen))

	steps := []struct {
		name                    string
		v                       VnetHdr
		frame                   []byte
		wantValid, wantBadCsum  uint64
		wantValidated, wantDone uint64 // csum_validated, csum_finished
	}{
		{"bad checksum, no flag", VnetHdr{}, bad, 0, 1, 0, 0},
		{"bad checksum, DATA_VALID", VnetHdr{Flags: vnetFlagDataValid}, bad, 1, 1, 1, 0},
		{"partial checksum, NEEDS_CSUM", pv, pf, 2, 1, 2, 0},
		{"good checksum, no flag", VnetHdr{}, good, 3, 1, 2, 0},
	}
	for _, st := range steps {
		h.handleVnetFrame(withVnet(st.v, st.frame))
		valid, badCsum := tcpCounts(s)
		c := h.Counters()
		if valid != st.wantValid || badCsum != st.wantBadCsum || c.CsumValidated != st.wantValidated || c.CsumFinished != st.wantDone {
			t.Errorf("%s: netstack valid %d bad checksum %d, csum_validated %d csum_finished %d; want %d %d %d %d",
				st.name, valid, badCsum, c.CsumValidated, c.CsumFinished, st.wantValid, st.wantBadCsum, st.wantValidated, st.wantDone)
		}
	}
	if got := s.Stats().Delivered; got != uint64(len(steps)) {
		t.Errorf("Delivered = %d, want %d", got, len(steps))
	}

	// Not TCP: a partial UDP checksum (RoCEv2 over IPv6) is finished as
	// before.
	roce := make(chan []byte, 1)
	h.RoCE().SetReceiver(func(f []byte) { roce <- bytes.Clone(f) })
	rf := roceFrame(t, peerMAC, hostMAC, peer6, host6, 0, []byte("partial"))
	rip := rf[ethHeaderLen:]
	rv, rpf := partial(rf, ethHeaderLen+ipv6HeaderLen, udpChecksumOffset, pseudoSum6(rip, ipProtoUDP, len(rip)-ipv6HeaderLen))
	h.handleVnetFrame(withVnet(rv, rpf))
	if got := <-roce; !bytes.Equal(got, rf) {
		t.Errorf("RoCE frame with NEEDS_CSUM delivered unfinished:\n%x\nwant\n%x", got, rf)
	}
	if c := h.Counters(); c.CsumFinished != 1 || c.CsumValidated != 2 {
		t.Errorf("after RoCE: csum_finished %d (want 1), csum_validated %d (want 2)", c.CsumFinished, c.CsumValidated)
	}
}

// TestRxChecksumOffloadNeedsHandler: without a SetTCPValidated handler a
// NEEDS_CSUM TCP frame is finished for the SetTCP one, and a partial
// checksum outside the TCP checksum field is not trusted.
func TestRxChecksumOffloadNeedsHandler(t *testing.T) {
	h, _, tcp, _ := newVnetHost(t)
	good := tcpSeg4(t, 5002, []byte("payload-x"))
	ip := good[ethHeaderLen:]
	pv, pf := partial(good, ethHeaderLen+ipv4HeaderLen, tcpChecksumOffset, pseudoSum4(ip, ipProtoTCP, len(ip)-ipv4HeaderLen))
	h.handleVnetFrame(withVnet(pv, pf))
	if got := <-tcp; !bytes.Equal(got, ip) {
		t.Error("without a validated handler the TCP frame did not arrive finished")
	}
	validated := make(chan []byte, 1)
	h.SetTCPValidated(func(p []byte) { validated <- bytes.Clone(p) })
	odd := pv
	odd.CsumStart = ethHeaderLen // a range starting at the IP header: not the kernel's TCP offload
	if got := h.tcpChecksumTrusted(pf, odd); got {
		t.Error("a partial checksum outside the TCP header was trusted")
	}
	h.handleVnetFrame(withVnet(pv, pf))
	if got := <-validated; !bytes.Equal(got, pf[ethHeaderLen:]) {
		t.Error("validated handler did not get the frame as read, its checksum unfinished")
	}
	if c := h.Counters(); c.CsumFinished != 1 || c.CsumValidated != 1 {
		t.Errorf("csum_finished %d (want 1), csum_validated %d (want 1)", c.CsumFinished, c.CsumValidated)
	}
}

// TestRxChecksumOffloadCapture: the capture of a NEEDS_CSUM TCP frame
// handed on unfinished still shows its checksum finished, as the wire
// would carry it.
func TestRxChecksumOffloadCapture(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rx.pcap")
	pw, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h, s := rxCsumNIC(t, func(c *HostConfig) { c.Pcap = pw })
	good := tcpSeg4(t, 5003, []byte("captured"))
	ip := good[ethHeaderLen:]
	pv, pf := partial(good, ethHeaderLen+ipv4HeaderLen, tcpChecksumOffset, pseudoSum4(ip, ipProtoTCP, len(ip)-ipv4HeaderLen))
	h.handleVnetFrame(withVnet(pv, pf))
	if valid, _ := tcpCounts(s); valid != 1 || h.Counters().CsumValidated != 1 {
		t.Fatalf("frame not taken as validated: netstack valid %d, counters %+v", valid, h.Counters())
	}
	h.Close()
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	frames, err := pcap.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, f := range frames {
		if len(f.Data) < ethHeaderLen || binary.BigEndian.Uint16(f.Data[12:]) != etherTypeIPv4 || f.Data[ethHeaderLen+9] != ipProtoTCP {
			continue
		}
		found = true
		if why := nsVerifyTCPPacket(f.Data[ethHeaderLen:]); why != "" {
			t.Errorf("captured TCP frame: %s", why)
		}
		if !bytes.Equal(f.Data, good) {
			t.Errorf("captured\n%x\nwant\n%x", f.Data, good)
		}
	}
	if !found {
		t.Error("no TCP frame in the capture")
	}
}
