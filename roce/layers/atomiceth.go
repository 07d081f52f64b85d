package layers

import (
	"github.com/gopacket/gopacket"

	"github.com/rnic/rnic/roce/wire"
)

// AtomicETH is the Atomic Extended Transport Header layer, IBTA Vol 1
// §9.3.4 (diagram in roce/wire/atomiceth.go): CmpSwap and FetchAdd requests.
type AtomicETH struct {
	ext
	wire.AtomicETHFields
}

// LayerType returns LayerTypeAtomicETH.
func (a *AtomicETH) LayerType() gopacket.LayerType { return LayerTypeAtomicETH }

// CanDecode returns LayerTypeAtomicETH.
func (a *AtomicETH) CanDecode() gopacket.LayerClass { return LayerTypeAtomicETH }

// DecodeFromBytes decodes the 28-byte header without allocating.
func (a *AtomicETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := a.decode(data, df, wire.HdrAtomicETH); err != nil {
		return err
	}
	a.AtomicETHFields = wire.AtomicETH(a.Contents).Fields()
	return nil
}

// SerializeTo prepends the header.
func (a *AtomicETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(wire.AtomicETHLen)
	if err != nil {
		return err
	}
	wire.AtomicETH(h).Encode(&a.AtomicETHFields)
	return nil
}

// AtomicAckETH is the Atomic Acknowledge Extended Transport Header layer,
// IBTA Vol 1 §9.5.3 (diagram in roce/wire/atomiceth.go): the original remote
// data after the AETH of an ATOMIC Acknowledge.
type AtomicAckETH struct {
	ext
	OrigData uint64
}

// LayerType returns LayerTypeAtomicAckETH.
func (a *AtomicAckETH) LayerType() gopacket.LayerType { return LayerTypeAtomicAckETH }

// CanDecode returns LayerTypeAtomicAckETH.
func (a *AtomicAckETH) CanDecode() gopacket.LayerClass { return LayerTypeAtomicAckETH }

// DecodeFromBytes decodes the 8-byte header without allocating.
func (a *AtomicAckETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := a.decode(data, df, wire.HdrAtomicAckETH); err != nil {
		return err
	}
	a.OrigData = wire.AtomicAckETH(a.Contents).OrigData()
	return nil
}

// SerializeTo prepends the header.
func (a *AtomicAckETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(wire.AtomicAckETHLen)
	if err != nil {
		return err
	}
	wire.AtomicAckETH(h).SetOrigData(a.OrigData)
	return nil
}
