package tap

import (
	"bytes"
	"net/netip"
	"slices"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"gvisor.dev/gvisor/pkg/buffer"
)

// superSegment4 is a TCP/IPv4 packet (no Ethernet) from peer4 to host4
// port 6000 with n bytes of payload and a correct checksum.
func superSegment4(t testing.TB, n int) []byte {
	ip := ip4(peer4, host4, layers.IPProtocolTCP)
	tcp := &layers.TCP{SrcPort: 5000, DstPort: 6000, Seq: 1, ACK: true, Ack: 1, Window: 1000,
		Options: []layers.TCPOption{{OptionType: layers.TCPOptionKindNop}, {OptionType: layers.TCPOptionKindNop},
			{OptionType: layers.TCPOptionKindTimestamps, OptionLength: 10, OptionData: make([]byte, 8)}}}
	tcp.SetNetworkLayerForChecksum(ip)
	return serialize(t, ip, tcp, gopacket.Payload(make([]byte, n)))
}

// viewSizes lists the sizes of b's views.
func viewSizes(b buffer.Buffer) []int {
	var sizes []int
	b.Apply(func(v *buffer.View) { sizes = append(sizes, v.Size()) })
	return sizes
}

// TestInboundBufferSplit: a TCP packet is copied as its IP header, its
// TCP header (options included) and its payload, each a view of its own;
// anything it cannot split is copied whole.
func TestInboundBufferSplit(t *testing.T) {
	p := superSegment4(t, 60000)
	b := inboundBuffer(p)
	defer b.Release()
	if got, want := viewSizes(b), []int{20, 32, 60000}; !slices.Equal(got, want) {
		t.Errorf("views %v, want %v", got, want)
	}
	if !bytes.Equal(b.Flatten(), p) {
		t.Error("the views do not hold the packet")
	}
	frag6 := append([]byte{0x60, 0, 0, 0, 0, 28, 44, 64}, append(make([]byte, 32), 6, 0, 0, 0, 0, 0, 0, 0)...)
	for _, q := range [][]byte{frag6, p[:30], {0x45}} {
		b := inboundBuffer(q)
		if got := viewSizes(b); len(got) != 1 || !bytes.Equal(b.Flatten(), q) {
			t.Errorf("%x: views %v, want the packet whole", q, got)
		}
		b.Release()
	}
}

func FuzzInboundBuffer(f *testing.F) {
	f.Add(superSegment4(f, 100))
	f.Add(append([]byte{0x60, 0, 0, 0, 0, 20, 6, 64}, make([]byte, 52)...))
	f.Add([]byte{0x4f, 0, 0, 20})
	f.Fuzz(func(t *testing.T, p []byte) {
		if _, ok := tcpPacketProtocol(p); !ok {
			return
		}
		b := inboundBuffer(p)
		defer b.Release()
		if !bytes.Equal(b.Flatten(), p) {
			t.Fatalf("inboundBuffer(%x) holds %x", p, b.Flatten())
		}
	})
}

// BenchmarkTCPStackDeliverSuperSegment: one 60000-byte TCP super-segment
// into netstack (no endpoint: it answers with a RST, which goes nowhere),
// its checksum validated, as the offload receive path delivers it.
func BenchmarkTCPStackDeliverSuperSegment(b *testing.B) {
	s, err := NewTCPStack(TCPStackConfig{Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.1/24")},
		Output: func([]byte) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p := superSegment4(b, 60000)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		s.DeliverValidated(p)
	}
}
