package wire

import "encoding/binary"

// MPAFrame is a view of an MPA Request or Reply frame, RFC 5044 §7.1.1 with
// the enhancements of RFC 6581 §9. The initiator sends the Request as the
// first octets of its side of the TCP stream, the responder answers with the
// Reply; FPDUs follow each (full operation).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	+         Key (16 bytes):  "MPA ID Req Frame"                   +
//	|                    or    "MPA ID Rep Frame"                   |
//	+                      (no NUL terminator)                      +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|M|C|R|S| Res   |     Rev       |          PD_Length            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	~                                                               ~
//	~                   Private Data (PD_Length octets)             ~
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The fields:
//   - M (markers): the sender of the frame wants markers in the FPDUs it
//     receives (Negotiate).
//   - C (CRC): the sender wants CRCs; CRCs are used in both directions when
//     either side sets C (RFC 5044 §7.1.1; siw and Wireshark agree).
//   - R (reject): in a Reply, the responder refuses the connection.
//   - S (enhanced, RFC 6581 §9): with Rev 2, the private data starts with
//     the IRD and ORD words below. RFC 5044 had this bit reserved.
//   - Res: reserved, zero on send, ignored on receive (MPAFrame.Reserved
//     reports it; Linux siw uses 0x08 privately for its GSO option).
//   - Rev: 1 for RFC 5044, 2 for RFC 6581 (what Linux siw sends); 0 is the
//     pre-IETF RDMA Consortium version (RFC 5044 Appendix C).
//   - PD_Length: private data octets, at most 512 (RFC 5044 §7.1.1); Linux
//     and Chelsio send at most 256.
//
// With S set (and Rev 2) the first 4 private data octets are the Enhanced
// RDMA Connection Establishment data, RFC 6581 §9.2:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|A|B|           IRD             |C|D|          ORD              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The fields:
//   - IRD, ORD: the sender's inbound and outbound RDMA Read queue depths
//     (14 bits each). Intel's i40iw/irdma send 0x3FFF in both when they
//     offer no values (IETF_NO_IRD_ORD); perftest's write and send tests
//     make siw send 0.
//   - A: the peer-to-peer model. The initiator asks for it in the Request,
//     and a responder that sees it MUST echo it in the Reply (§9.2); then
//     the initiator's first FPDU must be a Ready-to-Receive (RTR) message,
//     whose kind B, C and D negotiate.
//   - B: the RTR may be a zero-length Send (an FPDU carrying an empty Send
//     message). Linux siw names this bit ZERO_LENGTH_RTR, Chelsio's
//     iw_cxgb4 ZERO_LEN_FPDU_RTR and Intel's i40iw/irdma
//     IETF_FLPDU_ZERO_LEN: all the same Send-type RTR. siw never offers it
//     and does not accept it.
//   - C: the RTR may be a zero-length RDMA Write.
//   - D: the RTR may be a zero-length RDMA Read.
//
// The initiator sets every kind it can send, the responder exactly one of
// those in its Reply (siw picks Write, else Read). ULP private data (the
// rdma_cm's) follows the 4 octets.
type MPAFrame []byte

// MPA frame constants.
const (
	MPAKeyLen        = 16
	MPAHeaderLen     = 20 // key, flags, Rev, PD_Length
	MPAMaxPrivate    = 512
	MPAEnhancedLen   = 4 // the IRD and ORD words
	MPARev1          = 1
	MPARev2          = 2
	MPAFlagMarkers   = 0x80
	MPAFlagCRC       = 0x40
	MPAFlagReject    = 0x20
	MPAFlagEnhanced  = 0x10
	MPAFlagsReserved = 0x0F
	// IRDORDMask masks the 14-bit IRD and ORD values.
	IRDORDMask = 0x3FFF
)

// The frame keys.
const (
	MPAKeyRequest = "MPA ID Req Frame"
	MPAKeyReply   = "MPA ID Rep Frame"
)

// ParseMPAFrame parses the MPA Request or Reply at the start of b, the first
// octets of one direction of the stream. It returns the frame and its size,
// or ErrIncomplete when b is a prefix of a frame that is not all there yet
// (more of the stream is needed), or an invalid-frame error: ErrMPABadKey as
// soon as the octets seen cannot begin either key, ErrMPAPrivateData, or
// ErrMPAEnhanced. It does not judge Rev or the flags; negotiation does.
func ParseMPAFrame(b []byte) (MPAFrame, int, error) {
	k := min(len(b), MPAKeyLen)
	if string(b[:k]) != MPAKeyRequest[:k] && string(b[:k]) != MPAKeyReply[:k] {
		return nil, 0, ErrMPABadKey
	}
	if len(b) < MPAHeaderLen {
		return nil, 0, ErrIncomplete
	}
	pd := int(binary.BigEndian.Uint16(b[18:]))
	if pd > MPAMaxPrivate {
		return nil, 0, ErrMPAPrivateData
	}
	n := MPAHeaderLen + pd
	if len(b) < n {
		return nil, 0, ErrIncomplete
	}
	f := MPAFrame(b[:n])
	if f.HasIRDORD() && pd < MPAEnhancedLen {
		return nil, 0, ErrMPAEnhanced
	}
	return f, n, nil
}

// IsReply reports whether the frame is a Reply (else a Request).
func (f MPAFrame) IsReply() bool { return string(f[:MPAKeyLen]) == MPAKeyReply }

func (f MPAFrame) Markers() bool       { return f[16]&MPAFlagMarkers != 0 }
func (f MPAFrame) CRC() bool           { return f[16]&MPAFlagCRC != 0 }
func (f MPAFrame) Reject() bool        { return f[16]&MPAFlagReject != 0 }
func (f MPAFrame) Enhanced() bool      { return f[16]&MPAFlagEnhanced != 0 }
func (f MPAFrame) Reserved() uint8     { return f[16] & MPAFlagsReserved }
func (f MPAFrame) Rev() uint8          { return f[17] }
func (f MPAFrame) PDLength() int       { return int(binary.BigEndian.Uint16(f[18:])) }
func (f MPAFrame) PrivateData() []byte { return f[MPAHeaderLen:] }

// HasIRDORD reports whether the private data starts with the RFC 6581 IRD
// and ORD words: S is set and Rev is 2 or more.
func (f MPAFrame) HasIRDORD() bool { return f.Enhanced() && f.Rev() >= MPARev2 }

// IRDORD decodes the RFC 6581 words; the zero value when !HasIRDORD.
func (f MPAFrame) IRDORD() IRDORD {
	if !f.HasIRDORD() {
		return IRDORD{}
	}
	return decodeIRDORD(f[MPAHeaderLen:])
}

// ULPPrivateData returns the private data after the IRD and ORD words (all
// of it when there are none): what the ULP, e.g. the rdma_cm, sent.
func (f MPAFrame) ULPPrivateData() []byte {
	if f.HasIRDORD() {
		return f[MPAHeaderLen+MPAEnhancedLen:]
	}
	return f[MPAHeaderLen:]
}

// IRDORD is the RFC 6581 enhanced connection data.
type IRDORD struct {
	IRD        uint16 // 14 bits
	ORD        uint16 // 14 bits
	PeerToPeer bool   // A
	SendRTR    bool   // B: zero-length Send (siw: ZERO_LENGTH_RTR)
	WriteRTR   bool   // C: zero-length RDMA Write
	ReadRTR    bool   // D: zero-length RDMA Read
}

func decodeIRDORD(b []byte) IRDORD {
	ird, ord := binary.BigEndian.Uint16(b), binary.BigEndian.Uint16(b[2:])
	return IRDORD{
		IRD: ird & IRDORDMask, ORD: ord & IRDORDMask,
		PeerToPeer: ird&0x8000 != 0, SendRTR: ird&0x4000 != 0,
		WriteRTR: ord&0x8000 != 0, ReadRTR: ord&0x4000 != 0,
	}
}

func (v IRDORD) put(b []byte) {
	ird, ord := v.IRD&IRDORDMask, v.ORD&IRDORDMask
	if v.PeerToPeer {
		ird |= 0x8000
	}
	if v.SendRTR {
		ird |= 0x4000
	}
	if v.WriteRTR {
		ord |= 0x8000
	}
	if v.ReadRTR {
		ord |= 0x4000
	}
	binary.BigEndian.PutUint16(b, ird)
	binary.BigEndian.PutUint16(b[2:], ord)
}

// MPAFields is the decoded form of an MPA frame.
type MPAFields struct {
	Reply    bool // the Reply key, else the Request key
	Markers  bool
	CRC      bool
	Reject   bool
	Enhanced bool  // S
	Reserved uint8 // 4 bits, zero on send
	Rev      uint8
	// IRDORD is written at the start of the private data when Enhanced is
	// set and Rev is 2 or more (HasIRDORD).
	IRDORD IRDORD
	// PrivateData is the ULP's private data, after IRDORD if present.
	PrivateData []byte
}

// Fields decodes the view. PrivateData points into f.
func (f MPAFrame) Fields() MPAFields {
	return MPAFields{
		Reply: f.IsReply(), Markers: f.Markers(), CRC: f.CRC(), Reject: f.Reject(),
		Enhanced: f.Enhanced(), Reserved: f.Reserved(), Rev: f.Rev(),
		IRDORD: f.IRDORD(), PrivateData: f.ULPPrivateData(),
	}
}

// AppendMPAFrame appends the frame described by f to dst. It fails with
// ErrMPAPrivateData when the private data (with the IRD and ORD words) would
// exceed 512 octets.
func AppendMPAFrame(dst []byte, f *MPAFields) ([]byte, error) {
	withIRDORD := f.Enhanced && f.Rev >= MPARev2
	pd := len(f.PrivateData)
	if withIRDORD {
		pd += MPAEnhancedLen
	}
	if pd > MPAMaxPrivate {
		return dst, ErrMPAPrivateData
	}
	dst, b := grow(dst, MPAHeaderLen+pd)
	key := MPAKeyRequest
	if f.Reply {
		key = MPAKeyReply
	}
	copy(b, key)
	flags := f.Reserved & MPAFlagsReserved
	for _, fl := range [...]struct {
		on  bool
		bit uint8
	}{{f.Markers, MPAFlagMarkers}, {f.CRC, MPAFlagCRC}, {f.Reject, MPAFlagReject}, {f.Enhanced, MPAFlagEnhanced}} {
		if fl.on {
			flags |= fl.bit
		}
	}
	b[16], b[17] = flags, f.Rev
	binary.BigEndian.PutUint16(b[18:], uint16(pd))
	p := b[MPAHeaderLen:]
	if withIRDORD {
		f.IRDORD.put(p)
		p = p[MPAEnhancedLen:]
	}
	copy(p, f.PrivateData)
	return dst, nil
}

// Negotiate returns the framing of each direction once the Request and the
// (accepting) Reply are known, RFC 5044 §7.1.1: CRCs in both directions if
// either side set C; markers toward each side that set M.
func Negotiate(req, rep MPAFrame) (initiatorToResponder, responderToInitiator Framing) {
	crc := req.CRC() || rep.CRC()
	return Framing{CRC: crc, Markers: rep.Markers()}, Framing{CRC: crc, Markers: req.Markers()}
}
