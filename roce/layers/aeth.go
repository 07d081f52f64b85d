package layers

import (
	"errors"

	"github.com/gopacket/gopacket"

	"github.com/rnic/rnic/roce/wire"
)

// AETH is the ACK Extended Transport Header layer, IBTA Vol 1 §9.3.5
// (diagram and syndrome encoding in roce/wire/aeth.go): Acknowledge, ATOMIC
// Acknowledge and RDMA READ Response First/Last/Only.
type AETH struct {
	ext
	wire.AETHFields
}

// LayerType returns LayerTypeAETH.
func (a *AETH) LayerType() gopacket.LayerType { return LayerTypeAETH }

// CanDecode returns LayerTypeAETH.
func (a *AETH) CanDecode() gopacket.LayerClass { return LayerTypeAETH }

// DecodeFromBytes decodes the 4-byte header without allocating.
func (a *AETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := a.decode(data, df, wire.HdrAETH); err != nil {
		return err
	}
	v := wire.AETH(a.Contents)
	a.AETHFields = wire.AETHFields{Syndrome: v.Syndrome(), MSN: v.MSN()}
	return nil
}

// SerializeTo prepends the header.
func (a *AETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	if a.MSN > wire.PSNMask {
		return errors.New("roce/layers: serialize AETH: MSN is 24-bit")
	}
	h, err := b.PrependBytes(wire.AETHLen)
	if err != nil {
		return err
	}
	wire.AETH(h).Encode(a.Syndrome, a.MSN)
	return nil
}
