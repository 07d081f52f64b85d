package layers

import (
	"github.com/gopacket/gopacket"
	glayers "github.com/gopacket/gopacket/layers"

	"github.com/rnic/rnic/roce/wire"
)

// ext is what every extension-header layer shares: the gopacket base, and
// the link to the BTH whose opcode says which layer follows the header.
type ext struct {
	glayers.BaseLayer
	bth  *BTH
	next gopacket.LayerType
}

// NextLayerType returns the layer that follows this header: from the linked
// BTH's opcode when there is one; unlinked, the payload if bytes remain.
func (e *ext) NextLayerType() gopacket.LayerType { return e.next }

func (e *ext) link(b *BTH) { e.bth = b }

// decode takes h's bytes off the front of data and works out the next layer.
func (e *ext) decode(data []byte, df gopacket.DecodeFeedback, h wire.Hdr) error {
	n := h.Len()
	if len(data) < n {
		df.SetTruncated()
		return wire.ErrTruncated
	}
	e.Contents, e.Payload = data[:n], data[n:]
	e.next = gopacket.LayerTypeZero
	if e.bth != nil {
		if i, ok := hdrIndex(e.bth.Opcode, h); ok {
			e.next = nextLayer(e.bth.Opcode, i)
			return nil
		}
	}
	if len(e.Payload) > 0 {
		e.next = gopacket.LayerTypePayload
	}
	return nil
}

// extLayer is an extension-header layer.
type extLayer interface {
	gopacket.Layer
	gopacket.DecodingLayer
	gopacket.SerializableLayer
	link(*BTH)
}

// newExtLayer allocates the layer for h (the gopacket.NewPacket path).
func newExtLayer(h wire.Hdr) extLayer {
	switch h {
	case wire.HdrRETH:
		return &RETH{}
	case wire.HdrAETH:
		return &AETH{}
	case wire.HdrAtomicETH:
		return &AtomicETH{}
	case wire.HdrAtomicAckETH:
		return &AtomicAckETH{}
	case wire.HdrImmDt:
		return &ImmDt{}
	case wire.HdrIETH:
		return &IETH{}
	case wire.HdrDETH:
		return &DETH{}
	case wire.HdrFETH:
		return &FETH{}
	}
	return &CNP{}
}

// decodeStandalone is the registered decoder of an extension header met
// without its BTH (gopacket.NewPacket(data, LayerTypeRETH, ...)): it decodes
// the header and hands any remaining bytes to gopacket.Payload.
func decodeStandalone(h wire.Hdr) func([]byte, gopacket.PacketBuilder) error {
	return func(data []byte, p gopacket.PacketBuilder) error {
		l := newExtLayer(h)
		if err := l.DecodeFromBytes(data, p); err != nil {
			return err
		}
		p.AddLayer(l)
		if l.NextLayerType() == gopacket.LayerTypeZero {
			return nil
		}
		return p.NextDecoder(l.NextLayerType())
	}
}
