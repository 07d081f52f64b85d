package decode

import (
	"encoding/json"

	iwdecode "github.com/rnic/rnic/iwarp/decode"
	"github.com/rnic/rnic/roce/wire"
)

// JSON Lines output: one object per shown frame, then a summary object.
// Every object has "type": "roce", "unknown" or "summary". Frame objects
// carry the same information as the text line: numbers that are counts or
// sequence numbers (frame, psn, msn, len, payload, pad) are JSON numbers;
// identifiers, keys, addresses and 64-bit operands are "0x..." strings, as
// in the text (and so that 64-bit values survive JSON parsers that use
// doubles). "time" is seconds since the file's first frame.

type jsonRoCE struct {
	Type     string      `json:"type"`
	File     string      `json:"file,omitempty"`
	Frame    int         `json:"frame"`
	Time     json.Number `json:"time"`
	Src      string      `json:"src"`
	Dst      string      `json:"dst"`
	VLAN     *int        `json:"vlan,omitempty"`
	Opcode   uint8       `json:"opcode"`
	Op       string      `json:"op"`
	QP       string      `json:"qp"`
	PSN      uint32      `json:"psn"`
	SE       bool        `json:"se"`
	AckReq   bool        `json:"ackreq"`
	MigReq   bool        `json:"migreq"`
	FECN     bool        `json:"fecn"`
	BECN     bool        `json:"becn"`
	Pad      int         `json:"pad"`
	PKey     string      `json:"pkey"`
	RETH     *jsonRETH   `json:"reth,omitempty"`
	AETH     *jsonAETH   `json:"aeth,omitempty"`
	Atomic   *jsonAtomic `json:"atomic,omitempty"`
	Orig     string      `json:"orig,omitempty"`
	Imm      string      `json:"imm,omitempty"`
	InvRKey  string      `json:"inv_rkey,omitempty"`
	DETH     *jsonDETH   `json:"deth,omitempty"`
	FETH     *jsonFETH   `json:"feth,omitempty"`
	Payload  int         `json:"payload"`
	ICRC     string      `json:"icrc"`
	ICRCWire string      `json:"icrc_wire"`
	ICRCWant string      `json:"icrc_want,omitempty"`
}

type jsonRETH struct {
	VA   string `json:"va"`
	RKey string `json:"rkey"`
	Len  uint32 `json:"len"`
}

type jsonAETH struct {
	Syndrome string `json:"syndrome"`
	Text     string `json:"text"`
	MSN      uint32 `json:"msn"`
}

type jsonAtomic struct {
	VA   string `json:"va"`
	RKey string `json:"rkey"`
	Swap string `json:"swap,omitempty"`
	Add  string `json:"add,omitempty"`
	Cmp  string `json:"cmp,omitempty"`
}

type jsonDETH struct {
	QKey  string `json:"qkey"`
	SrcQP string `json:"srcqp"`
}

type jsonFETH struct {
	Placement   uint8 `json:"placement"`
	Selectivity uint8 `json:"selectivity"`
}

type jsonUnknown struct {
	Type   string      `json:"type"`
	File   string      `json:"file,omitempty"`
	Frame  int         `json:"frame"`
	Time   json.Number `json:"time"`
	Src    string      `json:"src,omitempty"`
	Dst    string      `json:"dst,omitempty"`
	VLAN   *int        `json:"vlan,omitempty"`
	Error  string      `json:"error"`
	Opcode *int        `json:"opcode,omitempty"`
	CapLen int         `json:"caplen"`
	Len    int         `json:"len"`
}

type jsonSummary struct {
	Type string `json:"type"`
	Summary
}

// AppendJSON appends r as one JSON object, without a newline, to dst. file
// may be empty. Records of KindOther give nothing.
func AppendJSON(dst []byte, file string, r *Record) ([]byte, error) {
	var v any
	switch r.Kind {
	case KindRoCE:
		v = roceJSON(file, r)
	case KindUnknown:
		u := jsonUnknown{Type: "unknown", File: file, Frame: r.Index, Time: seconds(r),
			Error: r.Err.Counter(), CapLen: r.CapLen, Len: r.Len, VLAN: vlan(r)}
		if r.Src.IsValid() {
			u.Src, u.Dst = r.Src.String(), r.Dst.String()
		}
		if r.Opcode >= 0 {
			op := r.Opcode
			u.Opcode = &op
		}
		v = u
	default:
		return dst, nil
	}
	b, err := json.Marshal(v)
	return append(dst, b...), err
}

// AppendSummaryJSON appends the summary object, without a newline.
func AppendSummaryJSON(dst []byte, s Summary) ([]byte, error) {
	b, err := json.Marshal(jsonSummary{Type: "summary", Summary: s})
	return append(dst, b...), err
}

func roceJSON(file string, r *Record) jsonRoCE {
	p := &r.Frame.Packet
	b := p.BTH()
	j := jsonRoCE{
		Type: "roce", File: file, Frame: r.Index, Time: seconds(r),
		Src: r.Src.String(), Dst: r.Dst.String(), VLAN: vlan(r),
		Opcode: uint8(p.Opcode()), Op: p.Info().Name, QP: hex(uint64(b.DestQP()), 6), PSN: b.PSN(),
		SE: b.SE(), AckReq: b.AckReq(), MigReq: b.MigReq(), FECN: b.FECN(), BECN: b.BECN(),
		Pad: b.PadCnt(), PKey: hex(uint64(b.PKey()), 4),
		Payload: len(p.Payload()), ICRC: "ok", ICRCWire: hex(uint64(r.ICRCGiven), 8),
	}
	if !r.ICRCOK {
		j.ICRC, j.ICRCWant = "bad", hex(uint64(r.ICRCWant), 8)
	}
	for _, h := range p.Info().Hdrs {
		switch h {
		case wire.HdrRETH:
			v := p.RETH()
			j.RETH = &jsonRETH{VA: hex(v.VA(), 0), RKey: hex(uint64(v.RKey()), 0), Len: v.DMALength()}
		case wire.HdrAETH:
			v := p.AETH()
			j.AETH = &jsonAETH{Syndrome: hex(uint64(v.Syndrome()), 2), Text: v.Syndrome().String(), MSN: v.MSN()}
		case wire.HdrAtomicETH:
			v := p.AtomicETH()
			j.Atomic = &jsonAtomic{VA: hex(v.VA(), 0), RKey: hex(uint64(v.RKey()), 0)}
			if p.Info().Kind == wire.KindFetchAdd {
				j.Atomic.Add = hex(v.SwapAdd(), 0)
			} else {
				j.Atomic.Swap, j.Atomic.Cmp = hex(v.SwapAdd(), 0), hex(v.Compare(), 0)
			}
		case wire.HdrAtomicAckETH:
			j.Orig = hex(p.AtomicAckETH().OrigData(), 0)
		case wire.HdrImmDt:
			j.Imm = hex(uint64(p.ImmDt().Imm()), 8)
		case wire.HdrIETH:
			j.InvRKey = hex(uint64(p.IETH().RKey()), 0)
		case wire.HdrDETH:
			v := p.DETH()
			j.DETH = &jsonDETH{QKey: hex(uint64(v.QKey()), 0), SrcQP: hex(uint64(v.SrcQP()), 6)}
		case wire.HdrFETH:
			v := p.FETH()
			j.FETH = &jsonFETH{Placement: v.PlacementType(), Selectivity: v.Selectivity()}
		}
	}
	return j
}

func hex(v uint64, width int) string { return string(iwdecode.AppendHex(nil, v, width)) }

func seconds(r *Record) json.Number { return json.Number(iwdecode.AppendSeconds(nil, r.Time)) }

func vlan(r *Record) *int {
	if r.VLAN < 0 {
		return nil
	}
	v := r.VLAN
	return &v
}
