package decode

import (
	"strconv"
	"time"

	"github.com/rnic/rnic/iwarp/wire"
)

// The text format, one line per record, in the style of the RoCEv2 lines
// of roce/decode:
//
//	#N T SRC > DST [vlan=V] MPA Request|MPA Reply rev=R flags=F [res=0xN]
//	    [ird=N ord=N [p2p] [rtr=send,write,read]] pd=N
//	#N T SRC > DST [vlan=V] OPCODE-NAME (stag=0x.. to=0x.. | qn=N msn=N mo=N)
//	    [last] [inv_stag=0x..] [RDMAP header] payload=N crc=ok|BAD|off
//	#N T SRC > DST [vlan=V] unknown: iwarp REASON seq=N [details]
//
// N is the frame number in its file and T the seconds since the file's
// first frame (doc.go says which frame an FPDU is reported at). MPA: F
// lists the flags set, M C R S in that order ("-" for none); res shows the
// reserved flag bits when not zero (siw's private GSO bit is 0x8); IRD,
// ORD and their flags (A p2p; B, C, D the RTR kinds) are shown when the
// frame carries them (Rev 2 with S); pd is PD_Length, the private data
// octets including the IRD/ORD words. FPDU: the opcode names are
// wire.Opcode's (RDMA Write, RDMA Read Request, RDMA Read Response, Send,
// Send with Invalidate, Send with Solicited Event, Send with Solicited
// Event and Invalidate, Terminate, ...); MSN, MO and QN are decimal, STags
// and TOs hex. The RDMAP headers are
//
//	sink_stag=0x.. sink_to=0x.. size=N src_stag=0x.. src_to=0x..   (Read Request)
//	term=0xLECC (LAYER, ETYPE, ERROR) [m] [d seglen=N] [r]           (Terminate)
//	atomic=OP req_id=0x.. stag=0x.. to=0x.. data=0x.. data_mask=0x..
//	    cmp=0x.. cmp_mask=0x..                                      (Atomic Request)
//	req_id=0x.. orig=0x..                                           (Atomic Response)
//	imm=0x................                                          (Immediate Data)
//
// payload counts the octets after the DDP and RDMAP headers (for a
// Terminate, its whole body: wire.Segment's Payload); crc is ok or BAD when
// CRCs were negotiated, off when not.
// An unknown line gives the reason (Record's Reason constants or a
// wire.Error counter name) and the relative sequence number where the
// problem starts, then: missing=N for a tcp_gap, have=N for an incomplete
// FPDU or MPA frame, held=N for mpa_not_negotiated, and for an FPDU whose
// ULPDU does not decode ulpdu=N [ctl=0xXXXX] crc=ok|BAD|off (ctl: its
// first two octets, the DDP and RDMAP control fields).

// AppendText appends r's line, without a newline, to dst.
func AppendText(dst []byte, r *Record) []byte {
	dst = append(dst, '#')
	dst = strconv.AppendInt(dst, int64(r.Index), 10)
	dst = append(dst, ' ')
	dst = AppendSeconds(dst, r.Time)
	dst = append(dst, ' ')
	dst = r.Src.AppendTo(dst)
	dst = append(dst, " > "...)
	dst = r.Dst.AppendTo(dst)
	if r.VLAN >= 0 {
		dst = append(dst, " vlan="...)
		dst = strconv.AppendInt(dst, int64(r.VLAN), 10)
	}
	switch r.Kind {
	case KindMPA:
		return appendMPAText(dst, r.MPA)
	case KindFPDU:
		return appendFPDUText(dst, r)
	}
	dst = append(dst, " unknown: iwarp "...)
	dst = append(dst, r.Reason...)
	dst = append(dst, " seq="...)
	dst = strconv.AppendUint(dst, r.Seq, 10)
	switch {
	case r.FPDU:
		dst = append(dst, " ulpdu="...)
		dst = strconv.AppendInt(dst, int64(r.ULPDULen), 10)
		if r.Ctl >= 0 {
			dst = append(dst, " ctl="...)
			dst = AppendHex(dst, uint64(r.Ctl), 4)
		}
		return appendCRC(dst, r)
	case r.Bytes == 0:
	case r.Reason == ReasonGap:
		dst = append(dst, " missing="...)
	case r.Reason == ReasonNotNegotiated:
		dst = append(dst, " held="...)
	default:
		dst = append(dst, " have="...)
	}
	if r.Bytes != 0 {
		dst = strconv.AppendInt(dst, r.Bytes, 10)
	}
	return dst
}

func appendMPAText(dst []byte, f wire.MPAFrame) []byte {
	if f.IsReply() {
		dst = append(dst, " MPA Reply rev="...)
	} else {
		dst = append(dst, " MPA Request rev="...)
	}
	dst = strconv.AppendUint(dst, uint64(f.Rev()), 10)
	dst = append(dst, " flags="...)
	dst = append(dst, mpaFlags(f)...)
	if res := f.Reserved(); res != 0 {
		dst = append(dst, " res="...)
		dst = AppendHex(dst, uint64(res), 0)
	}
	if f.HasIRDORD() {
		v := f.IRDORD()
		dst = append(dst, " ird="...)
		dst = strconv.AppendUint(dst, uint64(v.IRD), 10)
		dst = append(dst, " ord="...)
		dst = strconv.AppendUint(dst, uint64(v.ORD), 10)
		if v.PeerToPeer {
			dst = append(dst, " p2p"...)
		}
		if rtr := rtrKinds(v); rtr != "" {
			dst = append(dst, " rtr="...)
			dst = append(dst, rtr...)
		}
	}
	dst = append(dst, " pd="...)
	return strconv.AppendInt(dst, int64(f.PDLength()), 10)
}

// mpaFlags lists the flags set, MCRS, or "-".
func mpaFlags(f wire.MPAFrame) string {
	var b []byte
	for _, fl := range [...]struct {
		on bool
		c  byte
	}{{f.Markers(), 'M'}, {f.CRC(), 'C'}, {f.Reject(), 'R'}, {f.Enhanced(), 'S'}} {
		if fl.on {
			b = append(b, fl.c)
		}
	}
	if len(b) == 0 {
		return "-"
	}
	return string(b)
}

// rtrKinds lists the RTR kinds offered or chosen: send (B), write (C),
// read (D), comma-separated.
func rtrKinds(v wire.IRDORD) string {
	var b []byte
	for _, k := range [...]struct {
		on bool
		s  string
	}{{v.SendRTR, "send"}, {v.WriteRTR, "write"}, {v.ReadRTR, "read"}} {
		if k.on {
			if len(b) > 0 {
				b = append(b, ',')
			}
			b = append(b, k.s...)
		}
	}
	return string(b)
}

func appendFPDUText(dst []byte, r *Record) []byte {
	s := &r.Segment
	dst = append(dst, ' ')
	dst = append(dst, s.Info().Name...)
	dst = appendDDPText(dst, s)
	switch s.Info().Body {
	case wire.BodyReadRequest:
		dst = appendReadRequestText(dst, s.ReadRequest())
	case wire.BodyTerminate:
		dst = appendTerminateText(dst, s.Terminate())
	case wire.BodyAtomicRequest:
		dst = appendAtomicRequestText(dst, s.AtomicRequest())
	case wire.BodyAtomicResponse:
		v := s.AtomicResponse()
		dst = append(dst, " req_id="...)
		dst = AppendHex(dst, uint64(v.RequestID()), 0)
		dst = append(dst, " orig="...)
		dst = AppendHex(dst, v.OriginalValue(), 0)
	case wire.BodyImmediate:
		dst = append(dst, " imm="...)
		dst = AppendHex(dst, s.Immediate().Data(), 16)
	}
	dst = append(dst, " payload="...)
	dst = strconv.AppendInt(dst, int64(len(s.Payload())), 10)
	return appendCRC(dst, r)
}

// appendDDPText appends the DDP header's fields: STag and TO (tagged) or
// QN, MSN and MO (untagged), the Last flag, and a Send with Invalidate's
// STag.
func appendDDPText(dst []byte, s *wire.Segment) []byte {
	h := s.DDP()
	if h.Tagged() {
		dst = append(dst, " stag="...)
		dst = AppendHex(dst, uint64(h.STag()), 0)
		dst = append(dst, " to="...)
		dst = AppendHex(dst, h.TO(), 0)
	} else {
		dst = append(dst, " qn="...)
		dst = strconv.AppendUint(dst, uint64(h.QN()), 10)
		dst = append(dst, " msn="...)
		dst = strconv.AppendUint(dst, uint64(h.MSN()), 10)
		dst = append(dst, " mo="...)
		dst = strconv.AppendUint(dst, uint64(h.MO()), 10)
	}
	if h.Last() {
		dst = append(dst, " last"...)
	}
	if s.Info().Invalidate {
		dst = append(dst, " inv_stag="...)
		dst = AppendHex(dst, uint64(h.InvalidateSTag()), 0)
	}
	return dst
}

func appendReadRequestText(dst []byte, v wire.ReadRequest) []byte {
	dst = append(dst, " sink_stag="...)
	dst = AppendHex(dst, uint64(v.SinkSTag()), 0)
	dst = append(dst, " sink_to="...)
	dst = AppendHex(dst, v.SinkTO(), 0)
	dst = append(dst, " size="...)
	dst = strconv.AppendUint(dst, uint64(v.Size()), 10)
	dst = append(dst, " src_stag="...)
	dst = AppendHex(dst, uint64(v.SourceSTag()), 0)
	dst = append(dst, " src_to="...)
	return AppendHex(dst, v.SourceTO(), 0)
}

func appendTerminateText(dst []byte, t wire.Terminate) []byte {
	dst = append(dst, " term="...)
	dst = AppendHex(dst, uint64(t.Code()), 4)
	dst = append(dst, " ("...)
	dst = append(dst, t.Code().String()...)
	dst = append(dst, ')')
	if t.M() {
		dst = append(dst, " m"...)
	}
	if t.D() {
		dst = append(dst, " d seglen="...)
		dst = strconv.AppendUint(dst, uint64(t.DDPSegmentLength()), 10)
	}
	if t.R() {
		dst = append(dst, " r"...)
	}
	return dst
}

func appendAtomicRequestText(dst []byte, v wire.AtomicRequest) []byte {
	dst = append(dst, " atomic="...)
	if op := v.Op(); op.Valid() {
		dst = append(dst, op.String()...)
	} else {
		dst = strconv.AppendUint(dst, uint64(op), 10)
	}
	dst = append(dst, " req_id="...)
	dst = AppendHex(dst, uint64(v.RequestID()), 0)
	dst = append(dst, " stag="...)
	dst = AppendHex(dst, uint64(v.STag()), 0)
	dst = append(dst, " to="...)
	dst = AppendHex(dst, v.TO(), 0)
	dst = append(dst, " data="...)
	dst = AppendHex(dst, v.AddSwapData(), 0)
	dst = append(dst, " data_mask="...)
	dst = AppendHex(dst, v.AddSwapMask(), 0)
	dst = append(dst, " cmp="...)
	dst = AppendHex(dst, v.CompareData(), 0)
	dst = append(dst, " cmp_mask="...)
	return AppendHex(dst, v.CompareMask(), 0)
}

func appendCRC(dst []byte, r *Record) []byte {
	switch {
	case !r.CRCOn:
		return append(dst, " crc=off"...)
	case r.CRCOK:
		return append(dst, " crc=ok"...)
	}
	return append(dst, " crc=BAD"...)
}

// AppendHex appends v as 0x-prefixed hex, zero-padded to width digits.
// rnic decode prints RoCEv2 and iWARP lines in one output, so both
// decoders format through this one function (and AppendSeconds).
func AppendHex(dst []byte, v uint64, width int) []byte {
	dst = append(dst, "0x"...)
	var buf [16]byte
	s := strconv.AppendUint(buf[:0], v, 16)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// AppendSeconds appends d as seconds with six decimals (microseconds), the
// time column of rnic decode.
func AppendSeconds(dst []byte, d time.Duration) []byte {
	us := uint64(d / time.Microsecond)
	if d < 0 { // timestamps may go backwards in a capture
		dst = append(dst, '-')
		us = -us
	}
	dst = strconv.AppendUint(dst, us/1e6, 10)
	dst = append(dst, '.')
	var buf [8]byte
	frac := strconv.AppendUint(buf[:0], us%1e6, 10)
	for i := len(frac); i < 6; i++ {
		dst = append(dst, '0')
	}
	return append(dst, frac...)
}
