package tap

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// tcpPacket is an IPv4 or IPv6 header and the ports of a TCP header.
func tcpPacket(src, dst netip.AddrPort) []byte {
	var p []byte
	if dst.Addr().Is4() {
		p = make([]byte, 20+20)
		p[0], p[9] = 0x45, ipProtoTCP
		s, d := src.Addr().As4(), dst.Addr().As4()
		copy(p[12:], s[:])
		copy(p[16:], d[:])
		p = p[:20]
	} else {
		p = make([]byte, 40+20)
		p[0], p[6] = 0x60, ipProtoTCP
		s, d := src.Addr().As16(), dst.Addr().As16()
		copy(p[8:], s[:])
		copy(p[24:], d[:])
		p = p[:40]
	}
	l4 := make([]byte, 20)
	binary.BigEndian.PutUint16(l4, src.Port())
	binary.BigEndian.PutUint16(l4[2:], dst.Port())
	return append(p, l4...)
}

// TestOwns: a segment to a listener's port (any peer) is the stack's, one
// to a port nobody in it listens on is not, and asking allocates nothing.
func TestOwns(t *testing.T) {
	s, err := NewTCPStack(TCPStackConfig{Prefixes: nsAPrefixes, Output: func([]byte) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	peer4 := netip.AddrPortFrom(netip.MustParseAddr("10.9.0.9"), 40000)
	for _, p := range nsAPrefixes {
		l, err := s.Listen(netip.AddrPortFrom(p.Addr(), 18515))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		peer := peer4
		if p.Addr().Is6() {
			peer = netip.AddrPortFrom(netip.MustParseAddr("fd00:9::9"), 40000)
		}
		if !s.Owns(tcpPacket(peer, netip.AddrPortFrom(p.Addr(), 18515))) {
			t.Errorf("a SYN to the listener on %v is not the stack's", p.Addr())
		}
		if s.Owns(tcpPacket(peer, netip.AddrPortFrom(p.Addr(), 22))) {
			t.Errorf("a segment to port 22 of %v is the stack's", p.Addr())
		}
	}
	pkt := tcpPacket(peer4, netip.AddrPortFrom(nsAPrefixes[0].Addr(), 22))
	if n := testing.AllocsPerRun(100, func() { s.Owns(pkt) }); n != 0 {
		t.Errorf("Owns allocates %.1f times", n)
	}
	if s.Owns([]byte{0x45}) || s.Owns(nil) {
		t.Error("a runt is the stack's")
	}
}
