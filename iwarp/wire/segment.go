package wire

// A ULPDU, the payload of one FPDU, is one DDP segment carrying (part of) one
// RDMAP message, RFC 5041 §4.4 and RFC 5040 §4:
//
//	+------------------------+----------------------+---------------+
//	| DDP header + RDMAP ctl | RDMAP header (if any)| ULP payload   |
//	+------------------------+----------------------+---------------+
//	  14 tagged, 18 untagged   per opcode (opcode.go)  Write, Read Response, Sends
//
// Decode checks, in this order, what the receiver must answer with a
// Terminate (errors.go maps each check to its code): the DDP version, the
// header length, the RDMAP version, the opcode and its T flag, the queue
// number, and the size of the RDMAP header. It checks nothing that needs
// connection state (STags, MSN, MO): that is the engine's job.

// Segment is a decoded DDP segment: views into the bytes given to Decode.
// The zero value is not valid; Decode fills it.
type Segment struct {
	b      []byte
	op     *OpInfo
	hdrEnd int // end of the DDP header
	payOff int // end of the RDMAP header
}

// Decode validates ulpdu as a DDP segment and makes s a view of it. It never
// allocates.
func (s *Segment) Decode(ulpdu []byte) error {
	if len(ulpdu) < 2 {
		return ErrTruncated
	}
	h := DDPHeader(ulpdu)
	tagged := h.Tagged()
	if h.DV() != DDPVersion {
		if tagged {
			return ErrDDPVersionTagged
		}
		return ErrDDPVersionUntagged
	}
	hdrEnd := DDPHeaderLen(tagged)
	if len(ulpdu) < hdrEnd {
		return ErrTruncated
	}
	if h.RV() != RDMAPVersion {
		return ErrRDMAPVersion
	}
	op := h.Opcode().Info()
	if !op.Valid || op.Tagged != tagged {
		return ErrBadOpcode
	}
	if !tagged && h.QN() != op.QN {
		return ErrBadQN
	}
	payOff := hdrEnd
	switch op.Body {
	case BodyNone:
	case BodyTerminate:
		if _, err := ParseTerminate(ulpdu[hdrEnd:]); err != nil {
			return err
		}
		// The Terminate body is variable; Payload returns it.
	default:
		payOff += op.BodyLen
		if len(ulpdu) < payOff {
			return ErrTruncated
		}
		if len(ulpdu) != payOff {
			return ErrBadLength
		}
	}
	s.b, s.op, s.hdrEnd, s.payOff = ulpdu, op, hdrEnd, payOff
	return nil
}

// Bytes returns the whole segment.
func (s *Segment) Bytes() []byte { return s.b }

// Info returns the opcode's description.
func (s *Segment) Info() *OpInfo { return s.op }

// Opcode returns the RDMAP opcode.
func (s *Segment) Opcode() Opcode { return DDPHeader(s.b).Opcode() }

// DDP returns the DDP header (with the RDMAP control byte).
func (s *Segment) DDP() DDPHeader { return DDPHeader(s.b[:s.hdrEnd]) }

func (s *Segment) body(b Body) []byte {
	if s.op.Body != b {
		return nil
	}
	return s.b[s.hdrEnd:s.payOff]
}

// RDMAP header views; each is nil when the opcode lacks it.
func (s *Segment) ReadRequest() ReadRequest       { return s.body(BodyReadRequest) }
func (s *Segment) AtomicRequest() AtomicRequest   { return s.body(BodyAtomicRequest) }
func (s *Segment) AtomicResponse() AtomicResponse { return s.body(BodyAtomicResponse) }
func (s *Segment) Immediate() Immediate           { return s.body(BodyImmediate) }

// Terminate returns the Terminate body of a Terminate message, nil for any
// other opcode.
func (s *Segment) Terminate() Terminate {
	if s.op.Body != BodyTerminate {
		return nil
	}
	return Terminate(s.b[s.hdrEnd:])
}

// Payload returns what follows the headers: the ULP payload of a Write,
// Read Response or Send, the Terminate body of a Terminate, and nothing for
// the other opcodes.
func (s *Segment) Payload() []byte { return s.b[s.payOff:] }

// Headers holds every header field of a segment in decoded form: what
// Segment.Headers returns and AppendSegment encodes. Only the RDMAP header
// the opcode carries is used. A Terminate's body is not here: it is the
// segment's payload (AppendTerminate builds it).
type Headers struct {
	DDP            DDPFields
	ReadRequest    ReadRequestFields
	AtomicRequest  AtomicRequestFields
	AtomicResponse AtomicResponseFields
	Immediate      uint64
}

// Headers decodes every header field of s.
func (s *Segment) Headers() Headers {
	h := Headers{DDP: s.DDP().Fields()}
	switch s.op.Body {
	case BodyReadRequest:
		h.ReadRequest = s.ReadRequest().Fields()
	case BodyAtomicRequest:
		h.AtomicRequest = s.AtomicRequest().Fields()
	case BodyAtomicResponse:
		h.AtomicResponse = s.AtomicResponse().Fields()
	case BodyImmediate:
		h.Immediate = s.Immediate().Data()
	}
	return h
}

// HeadersLen is the size of the headers AppendHeaders writes for h.
func HeadersLen(h *Headers) int {
	op := h.DDP.Opcode.Info()
	n := DDPHeaderLen(op.Tagged)
	if op.Body != BodyTerminate {
		n += op.BodyLen
	}
	return n
}

// AppendHeaders appends the DDP header and the RDMAP header of h to dst,
// without payload: the engine hands them and the payload to AppendFPDU
// separately, so the payload is copied once, into the FPDU. The T flag is
// taken from the opcode table, whatever h.DDP.Tagged says.
func AppendHeaders(dst []byte, h *Headers) []byte {
	op := h.DDP.Opcode.Info()
	f := h.DDP
	f.Tagged = op.Tagged
	n := HeadersLen(h)
	dst, b := grow(dst, n)
	hdrEnd := DDPHeaderLen(f.Tagged)
	DDPHeader(b).Encode(&f)
	body := b[hdrEnd:]
	switch op.Body {
	case BodyReadRequest:
		ReadRequest(body).Encode(&h.ReadRequest)
	case BodyAtomicRequest:
		AtomicRequest(body).Encode(&h.AtomicRequest)
	case BodyAtomicResponse:
		AtomicResponse(body).Encode(&h.AtomicResponse)
	case BodyImmediate:
		Immediate(body).Encode(h.Immediate)
	}
	return dst
}

// AppendSegment appends a whole segment, headers and payload, to dst.
func AppendSegment(dst []byte, h *Headers, payload []byte) []byte {
	return append(AppendHeaders(dst, h), payload...)
}

// grow extends dst by n bytes, reallocating only when capacity is short, and
// returns the extended slice and the n new bytes (not zeroed).
func grow(dst []byte, n int) ([]byte, []byte) {
	l := len(dst)
	if cap(dst)-l < n {
		nb := make([]byte, l, 2*l+n)
		copy(nb, dst)
		dst = nb
	}
	dst = dst[:l+n]
	return dst, dst[l:]
}
