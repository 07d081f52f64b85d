package layers

import (
	"github.com/gopacket/gopacket"
	glayers "github.com/gopacket/gopacket/layers"

	"github.com/rnic/rnic/roce/wire"
)

// Layer type numbers; see the package documentation for the choice.
const (
	layerTypeBase = 1791
)

// The RoCEv2 layer types.
var (
	LayerTypeBTH          = register(0, "RoCEv2 BTH", decodeBTH)
	LayerTypeRETH         = register(1, "RoCEv2 RETH", decodeStandalone(wire.HdrRETH))
	LayerTypeAETH         = register(2, "RoCEv2 AETH", decodeStandalone(wire.HdrAETH))
	LayerTypeAtomicETH    = register(3, "RoCEv2 AtomicETH", decodeStandalone(wire.HdrAtomicETH))
	LayerTypeAtomicAckETH = register(4, "RoCEv2 AtomicAckETH", decodeStandalone(wire.HdrAtomicAckETH))
	LayerTypeImmDt        = register(5, "RoCEv2 ImmDt", decodeStandalone(wire.HdrImmDt))
	LayerTypeIETH         = register(6, "RoCEv2 IETH", decodeStandalone(wire.HdrIETH))
	LayerTypeDETH         = register(7, "RoCEv2 DETH", decodeStandalone(wire.HdrDETH))
	LayerTypeFETH         = register(8, "RoCEv2 FETH", decodeStandalone(wire.HdrFETH))
	LayerTypeCNP          = register(9, "RoCEv2 CNP", decodeStandalone(wire.HdrCNPPad))
)

func register(off int, name string, dec func([]byte, gopacket.PacketBuilder) error) gopacket.LayerType {
	return gopacket.RegisterLayerType(layerTypeBase+off, gopacket.LayerTypeMetadata{
		Name: name, Decoder: gopacket.DecodeFunc(dec),
	})
}

// hdrLayer maps a wire extension header to its layer type.
func hdrLayer(h wire.Hdr) gopacket.LayerType {
	switch h {
	case wire.HdrRETH:
		return LayerTypeRETH
	case wire.HdrAETH:
		return LayerTypeAETH
	case wire.HdrAtomicETH:
		return LayerTypeAtomicETH
	case wire.HdrAtomicAckETH:
		return LayerTypeAtomicAckETH
	case wire.HdrImmDt:
		return LayerTypeImmDt
	case wire.HdrIETH:
		return LayerTypeIETH
	case wire.HdrDETH:
		return LayerTypeDETH
	case wire.HdrFETH:
		return LayerTypeFETH
	case wire.HdrCNPPad:
		return LayerTypeCNP
	}
	return gopacket.LayerTypeZero
}

// nextLayer returns the layer that follows position i of op's header
// sequence: i = -1 is the BTH, i = 0 its first extension header, and so on.
// After the last header comes the payload if the opcode carries one.
func nextLayer(op wire.Opcode, i int) gopacket.LayerType {
	info := op.Info()
	if !info.Valid {
		return gopacket.LayerTypeZero
	}
	if i+1 < len(info.Hdrs) {
		return hdrLayer(info.Hdrs[i+1])
	}
	if info.Payload {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}

// hdrIndex is the position of h in op's header sequence, or -1 with ok
// false if the opcode does not carry h.
func hdrIndex(op wire.Opcode, h wire.Hdr) (i int, ok bool) {
	for i, x := range op.Info().Hdrs {
		if x == h {
			return i, true
		}
	}
	return -1, false
}

// RoCEv2 is reached from UDP by destination port (or source port, as
// gopacket's UDP.NextLayerType falls back to it). The table is global, so
// this is done once, here.
func init() {
	glayers.RegisterUDPPortLayerType(wire.UDPPort, LayerTypeBTH)
}
