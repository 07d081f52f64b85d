package layers

import (
	"github.com/gopacket/gopacket"

	"github.com/rnic/rnic/roce/wire"
)

// RETH is the RDMA Extended Transport Header layer, IBTA Vol 1 §9.3.3
// (diagram in roce/wire/reth.go): RDMA WRITE First/Only, READ Request,
// ATOMIC WRITE, and FLUSH after the FETH.
type RETH struct {
	ext
	wire.RETHFields
}

// LayerType returns LayerTypeRETH.
func (r *RETH) LayerType() gopacket.LayerType { return LayerTypeRETH }

// CanDecode returns LayerTypeRETH.
func (r *RETH) CanDecode() gopacket.LayerClass { return LayerTypeRETH }

// DecodeFromBytes decodes the 16-byte header without allocating.
func (r *RETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := r.decode(data, df, wire.HdrRETH); err != nil {
		return err
	}
	r.RETHFields = wire.RETH(r.Contents).Fields()
	return nil
}

// SerializeTo prepends the header.
func (r *RETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(wire.RETHLen)
	if err != nil {
		return err
	}
	wire.RETH(h).Encode(&r.RETHFields)
	return nil
}
