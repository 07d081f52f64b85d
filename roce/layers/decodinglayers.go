package layers

import "github.com/gopacket/gopacket"

// DecodingLayers is one of each RoCEv2 layer for the zero-allocation
// gopacket.DecodingLayerParser path, with every extension header linked to
// the bundle's BTH so that it knows, from the opcode, which layer follows it:
//
//	var roce layers.DecodingLayers
//	p := gopacket.NewDecodingLayerParser(glayers.LayerTypeEthernet,
//		append([]gopacket.DecodingLayer{&eth, &dot1q, &ip4, &ip6, &udp, &payload},
//			roce.Layers()...)...)
//
// After DecodeLayers, the fields of the layers it reports are valid. A
// DecodingLayers must not be copied after Layers is called.
type DecodingLayers struct {
	BTH          BTH
	RETH         RETH
	AETH         AETH
	AtomicETH    AtomicETH
	AtomicAckETH AtomicAckETH
	ImmDt        ImmDt
	IETH         IETH
	DETH         DETH
	FETH         FETH
	CNP          CNP
}

// Layers links the extension headers to the BTH and returns all the layers.
func (d *DecodingLayers) Layers() []gopacket.DecodingLayer {
	exts := []extLayer{&d.RETH, &d.AETH, &d.AtomicETH, &d.AtomicAckETH, &d.ImmDt, &d.IETH, &d.DETH, &d.FETH, &d.CNP}
	out := []gopacket.DecodingLayer{&d.BTH}
	for _, e := range exts {
		e.link(&d.BTH)
		out = append(out, e)
	}
	return out
}
