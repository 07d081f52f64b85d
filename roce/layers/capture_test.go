package layers_test

import (
	"slices"
	"testing"

	"github.com/gopacket/gopacket"
	glayers "github.com/gopacket/gopacket/layers"

	rlayers "github.com/rnic/rnic/roce/layers"
)

// TestCapturesNewPacket: every RoCEv2 frame of the real rxe captures decodes
// through gopacket.NewPacket into the layers its opcode prescribes, with
// every field equal to roce/wire's decode and the ICRC verified.
func TestCapturesNewPacket(t *testing.T) {
	n := 0
	for _, rf := range roceFrames(t) {
		pkt := gopacket.NewPacket(rf.bytes, glayers.LayerTypeEthernet, gopacket.Default)
		if el := pkt.ErrorLayer(); el != nil {
			t.Errorf("%s: decode failure: %v", rf.name, el.Error())
			continue
		}
		var got []gopacket.LayerType
		for _, l := range pkt.Layers() {
			got = append(got, l.LayerType())
			compareLayer(t, rf.name, l, &rf.wire.Packet)
		}
		if want := expectedTypes(&rf.wire); !slices.Equal(got, want) {
			t.Errorf("%s: layers %v, want %v", rf.name, got, want)
		}
		if !rlayers.VerifyICRC(pkt) {
			t.Errorf("%s: VerifyICRC false", rf.name)
		}
		n++
	}
	t.Logf("%d RoCEv2 frames compared", n)
}

// newParser returns a DecodingLayerParser from Ethernet through the RoCEv2
// layers, and the layers it fills.
type parser struct {
	eth     glayers.Ethernet
	dot1q   glayers.Dot1Q
	ip4     glayers.IPv4
	ip6     glayers.IPv6
	udp     glayers.UDP
	payload gopacket.Payload
	roce    rlayers.DecodingLayers
	p       *gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
}

func newParser() *parser {
	ps := &parser{decoded: make([]gopacket.LayerType, 0, 16)}
	ls := append([]gopacket.DecodingLayer{&ps.eth, &ps.dot1q, &ps.ip4, &ps.ip6, &ps.udp, &ps.payload},
		ps.roce.Layers()...)
	ps.p = gopacket.NewDecodingLayerParser(glayers.LayerTypeEthernet, ls...)
	return ps
}

// layer returns the parser's layer for type lt.
func (ps *parser) layer(lt gopacket.LayerType) gopacket.Layer {
	r := &ps.roce
	for _, l := range []gopacket.Layer{&ps.eth, &ps.dot1q, &ps.ip4, &ps.ip6, &ps.udp, &ps.payload,
		&r.BTH, &r.RETH, &r.AETH, &r.AtomicETH, &r.AtomicAckETH, &r.ImmDt, &r.IETH, &r.DETH, &r.FETH, &r.CNP} {
		if l.LayerType() == lt {
			return l
		}
	}
	return nil
}

// TestCapturesParser: the same comparison on the DecodingLayerParser path.
func TestCapturesParser(t *testing.T) {
	ps := newParser()
	for _, rf := range roceFrames(t) {
		if err := ps.p.DecodeLayers(rf.bytes, &ps.decoded); err != nil {
			t.Errorf("%s: %v", rf.name, err)
			continue
		}
		if want := expectedTypes(&rf.wire); !slices.Equal(ps.decoded, want) {
			t.Errorf("%s: layers %v, want %v", rf.name, ps.decoded, want)
		}
		for _, lt := range ps.decoded {
			compareLayer(t, rf.name, ps.layer(lt), &rf.wire.Packet)
		}
		ip := ps.ip4.Contents
		if rf.wire.IPv6 {
			ip = ps.ip6.Contents
		}
		if !ps.roce.BTH.VerifyICRC(ip, ps.udp.Contents) {
			t.Errorf("%s: BTH.VerifyICRC false", rf.name)
		}
	}
}

// TestParserAllocs: decoding a frame on the DecodingLayerParser path
// allocates nothing, RoCEv2 layers and gopacket's Ethernet/IP/UDP alike.
func TestParserAllocs(t *testing.T) {
	frames := roceFrames(t)
	ps := newParser()
	// From the UDP payload: the RoCEv2 layers alone.
	roce := gopacket.NewDecodingLayerParser(rlayers.LayerTypeBTH, append([]gopacket.DecodingLayer{&ps.payload}, ps.roce.Layers()...)...)
	decoded := make([]gopacket.LayerType, 0, 16)
	for _, i := range []int{0, len(frames) / 3, len(frames) / 2, len(frames) - 1} {
		rf := frames[i]
		pkt := rf.wire.Packet.Bytes()
		if a := testing.AllocsPerRun(200, func() {
			if err := roce.DecodeLayers(pkt, &decoded); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s (%v): RoCEv2 layers: %v allocs per decode", rf.name, rf.wire.Packet.Opcode(), a)
		}
		if a := testing.AllocsPerRun(200, func() {
			if err := ps.p.DecodeLayers(rf.bytes, &ps.decoded); err != nil {
				t.Fatal(err)
			}
			_ = ps.roce.BTH.VerifyICRC(ps.ip4.Contents, ps.udp.Contents)
		}); a != 0 {
			t.Errorf("%s (%v): whole frame: %v allocs per decode", rf.name, rf.wire.Packet.Opcode(), a)
		}
	}
}
