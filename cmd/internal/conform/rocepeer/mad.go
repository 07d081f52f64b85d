package rocepeer

import (
	"fmt"

	"github.com/rnic/rnic/roce/cm/mad"
	"github.com/rnic/rnic/roce/wire"
)

// The IB CM on RoCEv2 (IBTA Vol 1 chapter 12, Annex A17): MADs travel as
// UD SEND Only packets between the ports' QP1 with the GSI Q_Key.

// GSI numbers (IBTA §13.5.1, C13-13).
const (
	GSIQPN  = 1
	GSIQKey = 0x80010000
)

// GSIPacket is a MAD from the tester's QP1 to the DUT's QP1.
func GSIPacket(psn uint32, payload []byte) Packet {
	h := wire.Headers{BTH: wire.BTHFields{Opcode: wire.UDSendOnly, PKey: wire.DefaultPKey,
		DestQP: GSIQPN, AckReq: true, PSN: psn & wire.PSNMask}}
	h.DETH = wire.DETHFields{QKey: GSIQKey, SrcQP: GSIQPN}
	return Packet{H: h, Payload: payload}
}

// CMMessage is a CM message codec of roce/cm (REQ, REP, RTU, REJ, MRA,
// DREQ, DREP).
type CMMessage interface {
	Encode(m mad.MAD, tid uint64) error
}

// EncodeMAD builds the 256-byte MAD of msg with transaction ID tid.
func EncodeMAD(msg CMMessage, tid uint64) ([]byte, error) {
	b := make([]byte, mad.MADLen)
	if err := msg.Encode(mad.MAD(b), tid); err != nil {
		return nil, fmt.Errorf("encode CM MAD: %w", err)
	}
	return b, nil
}

// CMFrom returns the CM MAD a DUT packet carries, or nil when the packet
// is no GSI datagram with a CM MAD.
func CMFrom(p *wire.Packet) mad.MAD {
	if p.Opcode() != wire.UDSendOnly || p.BTH().DestQP() != GSIQPN {
		return nil
	}
	m, err := mad.ParseMAD(p.Payload())
	if err != nil {
		return nil
	}
	return m
}

// IsCM matches GSI packets carrying a CM MAD with attribute a.
func IsCM(a mad.AttrID) func(p *wire.Packet) bool {
	return func(p *wire.Packet) bool {
		m := CMFrom(p)
		return m != nil && m.AttrID() == a
	}
}

// EditCM rewrites the CM MAD of a frame (for Breaks): edit gets the class
// data (the 232 bytes after the MAD header).
func EditCM(edit func(data []byte)) func(f *wire.Frame) {
	return func(f *wire.Frame) {
		if m := CMFrom(&f.Packet); m != nil {
			edit(m.Data())
		}
	}
}
