package layers

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gopacket/gopacket"
	glayers "github.com/gopacket/gopacket/layers"

	"github.com/rnic/rnic/roce/wire"
)

// BTH is the Base Transport Header layer, IBTA Vol 1 §9.2; the diagram and
// field meanings are in roce/wire/bth.go. Decoding it validates the whole
// transport packet (opcode, TVer, header and pad lengths) with roce/wire's
// Packet.Decode, so a BTH that decodes is followed by exactly the extension
// headers its opcode names.
//
// Contents is the 12 BTH bytes; Payload is the extension headers and the
// payload, without the pad and the ICRC, which this layer keeps (PadCnt,
// ICRC). See the package documentation for why.
type BTH struct {
	glayers.BaseLayer
	wire.BTHFields
	// ICRC is the invariant CRC as carried on the wire, read little-endian
	// like wire.GetICRC. SerializeTo writes it as is; SealICRC computes it.
	ICRC uint32

	pkt []byte // the whole transport packet, BTH through ICRC, for VerifyICRC
}

// LayerType returns LayerTypeBTH.
func (b *BTH) LayerType() gopacket.LayerType { return LayerTypeBTH }

// CanDecode returns LayerTypeBTH.
func (b *BTH) CanDecode() gopacket.LayerClass { return LayerTypeBTH }

// NextLayerType returns the first extension header the opcode carries, the
// payload, or LayerTypeZero.
func (b *BTH) NextLayerType() gopacket.LayerType { return nextLayer(b.Opcode, -1) }

// Info returns the opcode's table entry.
func (b *BTH) Info() *wire.OpInfo { return b.Opcode.Info() }

// Packet returns the transport packet the BTH was decoded from, BTH through
// ICRC (nil after SerializeTo without decoding).
func (b *BTH) Packet() []byte { return b.pkt }

// DecodeFromBytes decodes data, a whole transport packet (the UDP payload),
// without allocating. On a structurally invalid packet whose BTH could still
// be read (bad opcode, bad pad, ...) the fields are filled, Payload is nil
// and the roce/wire Error is returned.
func (b *BTH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < wire.BTHLen+wire.ICRCLen {
		df.SetTruncated()
		return wire.ErrTruncated
	}
	b.BTHFields = wire.BTH(data).Fields()
	b.ICRC = wire.GetICRC(data)
	b.pkt = data
	b.Contents, b.Payload = data[:wire.BTHLen], nil
	var p wire.Packet
	if err := p.Decode(data); err != nil {
		return err
	}
	// Extension headers and payload are contiguous after the BTH; the
	// payload ends where the pad begins.
	b.Payload = data[wire.BTHLen : len(data)-wire.ICRCLen-b.PadCnt]
	return nil
}

// decodeBTH is the gopacket.NewPacket path. A BTH that could be read but
// does not validate is still added, so the failure layer that follows it
// says why (e.g. "roce: bad_opcode").
func decodeBTH(data []byte, p gopacket.PacketBuilder) error {
	b := &BTH{}
	err := b.DecodeFromBytes(data, p)
	if b.Contents == nil {
		return err
	}
	p.AddLayer(b)
	if err != nil {
		return err
	}
	return p.NextDecoder(chain{bth: b, i: 0})
}

// chain decodes the extension header at position i of the BTH's opcode, so
// that every header layer knows (through the BTH) which layer follows it.
type chain struct {
	bth *BTH
	i   int
}

func (c chain) Decode(data []byte, p gopacket.PacketBuilder) error {
	info := c.bth.Info()
	if c.i >= len(info.Hdrs) {
		return p.NextDecoder(gopacket.LayerTypePayload)
	}
	l := newExtLayer(info.Hdrs[c.i])
	l.link(c.bth)
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	return p.NextDecoder(chain{bth: c.bth, i: c.i + 1})
}

// SerializeTo prepends the BTH and appends the pad and the ICRC to what the
// inner layers (extension headers, payload) have already written. With
// opts.FixLengths, PadCnt is derived from the payload length; otherwise the
// given PadCnt is used as is. The ICRC written is b.ICRC: call SealICRC on
// the finished frame to compute it.
func (b *BTH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	info := b.Opcode.Info()
	if !info.Valid {
		return fmt.Errorf("roce/layers: serialize BTH: opcode %#02x: %w", uint8(b.Opcode), wire.ErrBadOpcode)
	}
	if b.DestQP > wire.PSNMask || b.PSN > wire.PSNMask {
		return errors.New("roce/layers: serialize BTH: DestQP and PSN are 24-bit")
	}
	n := len(buf.Bytes()) - info.HdrLen // payload length
	if n < 0 {
		return fmt.Errorf("roce/layers: serialize BTH: %v needs %d bytes of extension headers, have %d",
			b.Opcode, info.HdrLen, len(buf.Bytes()))
	}
	if opts.FixLengths {
		b.PadCnt = wire.PadFor(n)
	}
	tail, err := buf.AppendBytes(b.PadCnt&3 + wire.ICRCLen)
	if err != nil {
		return err
	}
	clear(tail)
	binary.LittleEndian.PutUint32(tail[len(tail)-wire.ICRCLen:], b.ICRC)
	h, err := buf.PrependBytes(wire.BTHLen)
	if err != nil {
		return err
	}
	f := b.BTHFields
	f.PadCnt &= 3
	wire.BTH(h).Encode(&f)
	return nil
}
