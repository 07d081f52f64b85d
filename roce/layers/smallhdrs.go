package layers

import (
	"errors"

	"github.com/gopacket/gopacket"

	"github.com/rnic/rnic/roce/wire"
)

// The small extension headers: ImmDt, IETH, DETH, FETH (IBTA Vol 1 §9.3.2,
// §9.3.5, §9.3.6, and 1.5 §9.3.8; diagrams in roce/wire/smallhdrs.go), and
// the 16 reserved bytes of a CNP (Annex A17.9).

// ImmDt is the Immediate Data layer: SEND and RDMA WRITE with Immediate.
type ImmDt struct {
	ext
	Imm uint32
}

// LayerType returns LayerTypeImmDt.
func (i *ImmDt) LayerType() gopacket.LayerType { return LayerTypeImmDt }

// CanDecode returns LayerTypeImmDt.
func (i *ImmDt) CanDecode() gopacket.LayerClass { return LayerTypeImmDt }

// DecodeFromBytes decodes the 4-byte header without allocating.
func (i *ImmDt) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := i.decode(data, df, wire.HdrImmDt); err != nil {
		return err
	}
	i.Imm = wire.ImmDt(i.Contents).Imm()
	return nil
}

// SerializeTo prepends the header.
func (i *ImmDt) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(wire.ImmDtLen)
	if err != nil {
		return err
	}
	wire.ImmDt(h).SetImm(i.Imm)
	return nil
}

// IETH is the Invalidate Extended Transport Header layer: SEND with
// Invalidate.
type IETH struct {
	ext
	RKey uint32 // the R_Key to invalidate
}

// LayerType returns LayerTypeIETH.
func (i *IETH) LayerType() gopacket.LayerType { return LayerTypeIETH }

// CanDecode returns LayerTypeIETH.
func (i *IETH) CanDecode() gopacket.LayerClass { return LayerTypeIETH }

// DecodeFromBytes decodes the 4-byte header without allocating.
func (i *IETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := i.decode(data, df, wire.HdrIETH); err != nil {
		return err
	}
	i.RKey = wire.IETH(i.Contents).RKey()
	return nil
}

// SerializeTo prepends the header.
func (i *IETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(wire.IETHLen)
	if err != nil {
		return err
	}
	wire.IETH(h).SetRKey(i.RKey)
	return nil
}

// DETH is the Datagram Extended Transport Header layer: UD packets.
type DETH struct {
	ext
	wire.DETHFields
}

// LayerType returns LayerTypeDETH.
func (d *DETH) LayerType() gopacket.LayerType { return LayerTypeDETH }

// CanDecode returns LayerTypeDETH.
func (d *DETH) CanDecode() gopacket.LayerClass { return LayerTypeDETH }

// DecodeFromBytes decodes the 8-byte header without allocating.
func (d *DETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := d.decode(data, df, wire.HdrDETH); err != nil {
		return err
	}
	d.DETHFields = wire.DETH(d.Contents).Fields()
	return nil
}

// SerializeTo prepends the header.
func (d *DETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	if d.SrcQP > wire.PSNMask {
		return errors.New("roce/layers: serialize DETH: source QP is 24-bit")
	}
	h, err := b.PrependBytes(wire.DETHLen)
	if err != nil {
		return err
	}
	wire.DETH(h).Encode(&d.DETHFields)
	return nil
}

// FETH is the Flush Extended Transport Header layer: RC FLUSH.
type FETH struct {
	ext
	Word uint32 // placement type in bits 3:0, selectivity in bits 5:4
}

// LayerType returns LayerTypeFETH.
func (f *FETH) LayerType() gopacket.LayerType { return LayerTypeFETH }

// CanDecode returns LayerTypeFETH.
func (f *FETH) CanDecode() gopacket.LayerClass { return LayerTypeFETH }

// PlacementType returns the placement type bits (wire.FlushGlobalVisibility,
// wire.FlushPersistence).
func (f *FETH) PlacementType() uint8 { return uint8(f.Word) & 0x0F }

// Selectivity returns wire.FlushSelectRange or wire.FlushSelectWholeMR.
func (f *FETH) Selectivity() uint8 { return uint8(f.Word>>4) & 3 }

// DecodeFromBytes decodes the 4-byte header without allocating.
func (f *FETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := f.decode(data, df, wire.HdrFETH); err != nil {
		return err
	}
	f.Word = wire.FETH(f.Contents).Word()
	return nil
}

// SerializeTo prepends the header.
func (f *FETH) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(wire.FETHLen)
	if err != nil {
		return err
	}
	wire.FETH(h).SetWord(f.Word)
	return nil
}

// CNP is the body of a Congestion Notification Packet (opcode 0x81): 16
// reserved bytes, sent as zeros.
type CNP struct {
	ext
	Reserved [16]byte
}

// LayerType returns LayerTypeCNP.
func (c *CNP) LayerType() gopacket.LayerType { return LayerTypeCNP }

// CanDecode returns LayerTypeCNP.
func (c *CNP) CanDecode() gopacket.LayerClass { return LayerTypeCNP }

// DecodeFromBytes decodes the 16 reserved bytes without allocating.
func (c *CNP) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := c.decode(data, df, wire.HdrCNPPad); err != nil {
		return err
	}
	copy(c.Reserved[:], c.Contents)
	return nil
}

// SerializeTo prepends the reserved bytes.
func (c *CNP) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(len(c.Reserved))
	if err != nil {
		return err
	}
	copy(h, c.Reserved[:])
	return nil
}
