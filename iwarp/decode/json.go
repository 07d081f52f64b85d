package decode

import (
	"encoding/json"
	"strconv"

	"github.com/rnic/rnic/iwarp/wire"
)

// JSON Lines output, in the conventions of roce/decode: one object per
// record, with "type" "mpa" (an MPA Request or Reply), "iwarp" (an FPDU;
// as many as the summary's iwarp count) or "unknown" with "proto":"iwarp"
// (as many, with the RoCEv2 ones, as its unknown count). Counts, lengths
// and sequence numbers (seq, msn, mo, qn, ird, ord) are JSON numbers;
// STags, TOs, codes and 64-bit operands are "0x..." strings. "time" is
// seconds since the file's first frame. The fields carry what the text line
// shows, plus seq (the relative TCP sequence number of the record's first
// octet), fpdu_len, pad and the CRC field's value. An MPA object has the
// flags as booleans m, c, r and s (markers, CRC, reject, enhanced).

type jsonMPA struct {
	Type     string      `json:"type"`
	File     string      `json:"file,omitempty"`
	Frame    int         `json:"frame"`
	Time     json.Number `json:"time"`
	Src      string      `json:"src"`
	Dst      string      `json:"dst"`
	VLAN     *int        `json:"vlan,omitempty"`
	Seq      uint64      `json:"seq"`
	MPA      string      `json:"mpa"` // "request" or "reply"
	Rev      uint8       `json:"rev"`
	Markers  bool        `json:"m"`
	CRC      bool        `json:"c"`
	Reject   bool        `json:"r"`
	Enhanced bool        `json:"s"`
	Reserved uint8       `json:"res"`
	IRD      *uint16     `json:"ird,omitempty"`
	ORD      *uint16     `json:"ord,omitempty"`
	P2P      bool        `json:"p2p,omitempty"`
	RTR      string      `json:"rtr,omitempty"`
	PDLen    int         `json:"pd_len"`
}

type jsonFPDU struct {
	Type     string          `json:"type"`
	File     string          `json:"file,omitempty"`
	Frame    int             `json:"frame"`
	Time     json.Number     `json:"time"`
	Src      string          `json:"src"`
	Dst      string          `json:"dst"`
	VLAN     *int            `json:"vlan,omitempty"`
	Seq      uint64          `json:"seq"`
	FPDULen  int             `json:"fpdu_len"`
	Opcode   uint8           `json:"opcode"`
	Op       string          `json:"op"`
	Tagged   bool            `json:"tagged"`
	Last     bool            `json:"last"`
	STag     string          `json:"stag,omitempty"`
	TO       string          `json:"to,omitempty"`
	QN       *uint32         `json:"qn,omitempty"`
	MSN      *uint32         `json:"msn,omitempty"`
	MO       *uint32         `json:"mo,omitempty"`
	InvSTag  string          `json:"inv_stag,omitempty"`
	ReadReq  *jsonReadReq    `json:"read_request,omitempty"`
	Term     *jsonTerm       `json:"terminate,omitempty"`
	AtomReq  *jsonAtomicReq  `json:"atomic_request,omitempty"`
	AtomResp *jsonAtomicResp `json:"atomic_response,omitempty"`
	Imm      string          `json:"imm,omitempty"`
	Payload  int             `json:"payload"`
	Pad      int             `json:"pad"`
	CRC      string          `json:"crc"` // "ok", "bad" or "off"
	CRCWire  string          `json:"crc_wire"`
}

type jsonReadReq struct {
	SinkSTag string `json:"sink_stag"`
	SinkTO   string `json:"sink_to"`
	Size     uint32 `json:"size"`
	SrcSTag  string `json:"src_stag"`
	SrcTO    string `json:"src_to"`
}

type jsonTerm struct {
	Code   string `json:"code"`
	Text   string `json:"text"`
	M      bool   `json:"m"`
	D      bool   `json:"d"`
	R      bool   `json:"r"`
	SegLen *int   `json:"seglen,omitempty"`
}

type jsonAtomicReq struct {
	Op       string `json:"op"`
	ReqID    string `json:"req_id"`
	STag     string `json:"stag"`
	TO       string `json:"to"`
	Data     string `json:"data"`
	DataMask string `json:"data_mask"`
	Cmp      string `json:"cmp"`
	CmpMask  string `json:"cmp_mask"`
}

type jsonAtomicResp struct {
	ReqID string `json:"req_id"`
	Orig  string `json:"orig"`
}

type jsonUnknown struct {
	Type  string      `json:"type"`
	Proto string      `json:"proto"`
	File  string      `json:"file,omitempty"`
	Frame int         `json:"frame"`
	Time  json.Number `json:"time"`
	Src   string      `json:"src"`
	Dst   string      `json:"dst"`
	VLAN  *int        `json:"vlan,omitempty"`
	Error string      `json:"error"`
	Seq   uint64      `json:"seq"`
	Bytes int64       `json:"bytes,omitempty"`
	ULPDU *int        `json:"ulpdu,omitempty"`
	Ctl   string      `json:"ctl,omitempty"`
	CRC   string      `json:"crc,omitempty"`
}

// AppendJSON appends r as one JSON object, without a newline, to dst. file
// may be empty.
func AppendJSON(dst []byte, file string, r *Record) ([]byte, error) {
	var v any
	switch r.Kind {
	case KindMPA:
		v = mpaJSON(file, r)
	case KindFPDU:
		v = fpduJSON(file, r)
	default:
		u := jsonUnknown{Type: "unknown", Proto: "iwarp", File: file, Frame: r.Index, Time: seconds(r),
			Src: r.Src.String(), Dst: r.Dst.String(), VLAN: vlan(r), Error: r.Reason, Seq: r.Seq, Bytes: r.Bytes}
		if r.FPDU {
			n := r.ULPDULen
			u.ULPDU, u.CRC = &n, crcWord(r)
			if r.Ctl >= 0 {
				u.Ctl = hex(uint64(r.Ctl), 4)
			}
		}
		v = u
	}
	b, err := json.Marshal(v)
	return append(dst, b...), err
}

func mpaJSON(file string, r *Record) jsonMPA {
	f := r.MPA
	j := jsonMPA{Type: "mpa", File: file, Frame: r.Index, Time: seconds(r), Src: r.Src.String(), Dst: r.Dst.String(),
		VLAN: vlan(r), Seq: r.Seq, MPA: "request", Rev: f.Rev(), Markers: f.Markers(), CRC: f.CRC(),
		Reject: f.Reject(), Enhanced: f.Enhanced(), Reserved: f.Reserved(), PDLen: f.PDLength()}
	if f.IsReply() {
		j.MPA = "reply"
	}
	if f.HasIRDORD() {
		v := f.IRDORD()
		j.IRD, j.ORD, j.P2P, j.RTR = &v.IRD, &v.ORD, v.PeerToPeer, rtrKinds(v)
	}
	return j
}

func fpduJSON(file string, r *Record) jsonFPDU {
	s := &r.Segment
	h := s.DDP()
	j := jsonFPDU{Type: "iwarp", File: file, Frame: r.Index, Time: seconds(r), Src: r.Src.String(), Dst: r.Dst.String(),
		VLAN: vlan(r), Seq: r.Seq, FPDULen: r.WireLen, Opcode: uint8(s.Opcode()), Op: s.Info().Name,
		Tagged: h.Tagged(), Last: h.Last(), Payload: len(s.Payload()), Pad: r.PadLen,
		CRC: crcWord(r), CRCWire: hex(uint64(r.CRC), 8)}
	if h.Tagged() {
		j.STag, j.TO = hex(uint64(h.STag()), 0), hex(h.TO(), 0)
	} else {
		qn, msn, mo := h.QN(), h.MSN(), h.MO()
		j.QN, j.MSN, j.MO = &qn, &msn, &mo
	}
	if s.Info().Invalidate {
		j.InvSTag = hex(uint64(h.InvalidateSTag()), 0)
	}
	switch s.Info().Body {
	case wire.BodyReadRequest:
		v := s.ReadRequest()
		j.ReadReq = &jsonReadReq{SinkSTag: hex(uint64(v.SinkSTag()), 0), SinkTO: hex(v.SinkTO(), 0), Size: v.Size(),
			SrcSTag: hex(uint64(v.SourceSTag()), 0), SrcTO: hex(v.SourceTO(), 0)}
	case wire.BodyTerminate:
		t := s.Terminate()
		j.Term = &jsonTerm{Code: hex(uint64(t.Code()), 4), Text: t.Code().String(), M: t.M(), D: t.D(), R: t.R()}
		if t.D() {
			n := int(t.DDPSegmentLength())
			j.Term.SegLen = &n
		}
	case wire.BodyAtomicRequest:
		v := s.AtomicRequest()
		op := v.Op().String()
		if !v.Op().Valid() {
			op = strconv.Itoa(int(v.Op()))
		}
		j.AtomReq = &jsonAtomicReq{Op: op, ReqID: hex(uint64(v.RequestID()), 0), STag: hex(uint64(v.STag()), 0),
			TO: hex(v.TO(), 0), Data: hex(v.AddSwapData(), 0), DataMask: hex(v.AddSwapMask(), 0),
			Cmp: hex(v.CompareData(), 0), CmpMask: hex(v.CompareMask(), 0)}
	case wire.BodyAtomicResponse:
		v := s.AtomicResponse()
		j.AtomResp = &jsonAtomicResp{ReqID: hex(uint64(v.RequestID()), 0), Orig: hex(v.OriginalValue(), 0)}
	case wire.BodyImmediate:
		j.Imm = hex(s.Immediate().Data(), 16)
	}
	return j
}

func crcWord(r *Record) string {
	switch {
	case !r.CRCOn:
		return "off"
	case r.CRCOK:
		return "ok"
	}
	return "bad"
}

func hex(v uint64, width int) string { return string(AppendHex(nil, v, width)) }

func seconds(r *Record) json.Number { return json.Number(AppendSeconds(nil, r.Time)) }

func vlan(r *Record) *int {
	if r.VLAN < 0 {
		return nil
	}
	v := r.VLAN
	return &v
}
