package layers

import (
	"github.com/gopacket/gopacket"

	"github.com/rnic/rnic/roce/wire"
)

// SerializableLayers returns the BTH and the extension-header layers of h,
// in the order h.BTH.Opcode prescribes, ready to be followed by a
// gopacket.Payload in gopacket.SerializeLayers:
//
//	ls := append([]gopacket.SerializableLayer{&eth, &ip4, &udp}, layers.SerializableLayers(&h)...)
//	err := gopacket.SerializeLayers(buf, opts, append(ls, gopacket.Payload(p))...)
//	err = layers.SealICRC(buf.Bytes())
func SerializableLayers(h *wire.Headers) []gopacket.SerializableLayer {
	info := h.BTH.Opcode.Info()
	out := []gopacket.SerializableLayer{&BTH{BTHFields: h.BTH}}
	for _, hd := range info.Hdrs {
		var l gopacket.SerializableLayer
		switch hd {
		case wire.HdrRETH:
			l = &RETH{RETHFields: h.RETH}
		case wire.HdrAETH:
			l = &AETH{AETHFields: h.AETH}
		case wire.HdrAtomicETH:
			l = &AtomicETH{AtomicETHFields: h.AtomicETH}
		case wire.HdrAtomicAckETH:
			l = &AtomicAckETH{OrigData: h.AtomicAck}
		case wire.HdrImmDt:
			l = &ImmDt{Imm: h.Imm}
		case wire.HdrIETH:
			l = &IETH{RKey: h.IETH}
		case wire.HdrDETH:
			l = &DETH{DETHFields: h.DETH}
		case wire.HdrFETH:
			l = &FETH{Word: h.FETH}
		case wire.HdrCNPPad:
			l = &CNP{}
		}
		out = append(out, l)
	}
	return out
}
