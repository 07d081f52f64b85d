package wire

import "encoding/binary"

// A RoCEv2 transport packet is the UDP payload (Annex A17.4):
//
//	+-----+-------------------+---------+---------+------+
//	| BTH | extension headers | payload | pad 0-3 | ICRC |
//	+-----+-------------------+---------+---------+------+
//	  12    per opcode          0..MTU    PadCnt    4
//
// Which extension headers follow the BTH, and in which order, is fixed by
// the opcode (opcode.go). The pad brings the payload to a multiple of four
// bytes (§9.2.4); the ICRC covers everything including the pad.

// ICRCLen is the size of the invariant CRC.
const ICRCLen = 4

// Packet is a decoded transport packet: views into the bytes given to
// Decode. The zero value is not valid; Decode fills it.
type Packet struct {
	b      []byte
	op     *OpInfo
	payOff int
	payEnd int
}

// Decode validates b as a transport packet (BTH through ICRC) and makes p a
// view of it. It checks the structure only; the ICRC needs the IP and UDP
// headers (Frame.VerifyICRC). It never allocates.
func (p *Packet) Decode(b []byte) error {
	if len(b) < BTHLen+ICRCLen || len(b)%4 != 0 {
		// Every header is a whole number of 32-bit words and the pad
		// rounds the payload up to one (§9.2.4), so a packet of any other
		// length is malformed.
		return ErrBadLength
	}
	bth := BTH(b)
	op := bth.Opcode().Info()
	if !op.Valid {
		return ErrBadOpcode
	}
	if bth.TVer() != 0 {
		return ErrBadTVer
	}
	payOff := BTHLen + op.HdrLen
	end := len(b) - ICRCLen
	if payOff > end {
		return ErrBadLength
	}
	pad := bth.PadCnt()
	if !op.Payload {
		if pad != 0 || payOff != end {
			// Trailing bytes after a header-only packet: the length is
			// inconsistent with the opcode (C9-34: malformed, dropped).
			if pad != 0 {
				return ErrBadPad
			}
			return ErrBadLength
		}
	} else if payOff+pad > end {
		return ErrBadPad
	} else if op.FixedPayload != 0 && end-pad-payOff != op.FixedPayload {
		return ErrBadLength
	}
	p.b, p.op, p.payOff, p.payEnd = b, op, payOff, end-pad
	return nil
}

// Bytes returns the whole packet, BTH through ICRC.
func (p *Packet) Bytes() []byte { return p.b }

// Info returns the opcode's description.
func (p *Packet) Info() *OpInfo { return p.op }

// Opcode returns the BTH opcode.
func (p *Packet) Opcode() Opcode { return Opcode(p.b[0]) }

// BTH returns the base transport header.
func (p *Packet) BTH() BTH { return BTH(p.b[:BTHLen]) }

func (p *Packet) hdr(h Hdr) []byte {
	off := p.op.off[h]
	if off < 0 {
		return nil
	}
	s := BTHLen + int(off)
	return p.b[s : s+int(hdrLens[h])]
}

// Extension header views; each is nil when the opcode lacks the header.
func (p *Packet) RETH() RETH                 { return p.hdr(HdrRETH) }
func (p *Packet) AETH() AETH                 { return p.hdr(HdrAETH) }
func (p *Packet) AtomicETH() AtomicETH       { return p.hdr(HdrAtomicETH) }
func (p *Packet) AtomicAckETH() AtomicAckETH { return p.hdr(HdrAtomicAckETH) }
func (p *Packet) ImmDt() ImmDt               { return p.hdr(HdrImmDt) }
func (p *Packet) IETH() IETH                 { return p.hdr(HdrIETH) }
func (p *Packet) DETH() DETH                 { return p.hdr(HdrDETH) }
func (p *Packet) FETH() FETH                 { return p.hdr(HdrFETH) }

// Payload returns the payload without pad.
func (p *Packet) Payload() []byte { return p.b[p.payOff:p.payEnd] }

// PadBytes returns the pad.
func (p *Packet) PadBytes() []byte { return p.b[p.payEnd : len(p.b)-ICRCLen] }

// WireICRC returns the ICRC as carried in the packet.
func (p *Packet) WireICRC() uint32 { return GetICRC(p.b) }

// Headers holds every header field of a transport packet in decoded form:
// what Packet.Headers returns and AppendPacket encodes. Only the headers the
// opcode carries are used.
type Headers struct {
	BTH       BTHFields
	RETH      RETHFields
	AETH      AETHFields
	AtomicETH AtomicETHFields
	AtomicAck uint64 // AtomicAckETH original remote data
	Imm       uint32 // ImmDt
	IETH      uint32 // R_Key to invalidate
	DETH      DETHFields
	FETH      uint32
}

// AETHFields is the decoded form of an AETH.
type AETHFields struct {
	Syndrome Syndrome
	MSN      uint32
}

// Headers decodes every header field of p.
func (p *Packet) Headers() Headers {
	h := Headers{BTH: p.BTH().Fields()}
	if v := p.RETH(); v != nil {
		h.RETH = v.Fields()
	}
	if v := p.AETH(); v != nil {
		h.AETH = AETHFields{v.Syndrome(), v.MSN()}
	}
	if v := p.AtomicETH(); v != nil {
		h.AtomicETH = v.Fields()
	}
	if v := p.AtomicAckETH(); v != nil {
		h.AtomicAck = v.OrigData()
	}
	if v := p.ImmDt(); v != nil {
		h.Imm = v.Imm()
	}
	if v := p.IETH(); v != nil {
		h.IETH = v.RKey()
	}
	if v := p.DETH(); v != nil {
		h.DETH = v.Fields()
	}
	if v := p.FETH(); v != nil {
		h.FETH = v.Word()
	}
	return h
}

// PadFor returns the pad count for a payload of n bytes.
func PadFor(n int) int { return -n & 3 }

// PacketLen returns the size of a transport packet with opcode op and an
// n-byte payload, ICRC included.
func PacketLen(op Opcode, n int) int {
	return BTHLen + op.Info().HdrLen + n + PadFor(n) + ICRCLen
}

// AppendPacket appends the transport packet for h and payload to dst: BTH,
// the opcode's extension headers, payload, zero pad and a zero ICRC
// placeholder (the ICRC needs the IP and UDP headers: see AppendFrame or
// ICRC). The BTH PadCnt is derived from the payload length. A payload given
// for an opcode without one is ignored.
func AppendPacket(dst []byte, h *Headers, payload []byte) []byte {
	dst, room := AppendPacketSpace(dst, h, len(payload))
	copy(room, payload)
	return dst
}

// AppendPacketSpace is AppendPacket for a payload the caller writes itself
// (straight from memory, without an intermediate copy): it appends the
// headers, n bytes of payload room, the zero pad and the ICRC placeholder,
// and returns the room. The room's old contents are zeroed only if it is
// newly allocated; the caller must fill all of it. n is forced to 0 for an
// opcode without payload.
func AppendPacketSpace(dst []byte, h *Headers, n int) (out, room []byte) {
	op := h.BTH.Opcode.Info()
	if !op.Payload {
		n = 0
	}
	total := PacketLen(h.BTH.Opcode, n)
	start := len(dst)
	dst = grow(dst, total)
	b := dst[start:]
	bth := h.BTH
	bth.PadCnt = PadFor(n)
	BTH(b).Encode(&bth)
	for _, hd := range op.Hdrs {
		v := b[BTHLen+int(op.off[hd]):]
		switch hd {
		case HdrRETH:
			RETH(v).Encode(&h.RETH)
		case HdrAETH:
			AETH(v).Encode(h.AETH.Syndrome, h.AETH.MSN)
		case HdrAtomicETH:
			AtomicETH(v).Encode(&h.AtomicETH)
		case HdrAtomicAckETH:
			binary.BigEndian.PutUint64(v, h.AtomicAck)
		case HdrImmDt:
			binary.BigEndian.PutUint32(v, h.Imm)
		case HdrIETH:
			binary.BigEndian.PutUint32(v, h.IETH)
		case HdrDETH:
			DETH(v).Encode(&h.DETH)
		case HdrFETH:
			binary.BigEndian.PutUint32(v, h.FETH)
		case HdrCNPPad:
			clear(v[:16])
		}
	}
	off := BTHLen + op.HdrLen
	clear(b[off+n:])
	return dst, b[off : off+n]
}

// grow extends dst by n bytes, reallocating only when capacity is short.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst[:len(dst)+n]
	}
	nb := make([]byte, len(dst)+n, 2*len(dst)+n)
	copy(nb, dst)
	return nb
}
