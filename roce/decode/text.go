package decode

import (
	"strconv"

	iwdecode "github.com/rnic/rnic/iwarp/decode"
	"github.com/rnic/rnic/roce/wire"
)

// The text format, one line per shown frame:
//
//	#N T SRC > DST [vlan=V] OPCODE-NAME qp=0xQQQQQQ psn=P [se] [ackreq] [migreq]
//	    [fecn] [becn] [pad=N] [pkey=0xKKKK] [extension headers] payload=N icrc=ok|BAD
//
// N is the frame number in its file (1-based, as Wireshark counts), T the
// seconds since the file's first frame with microsecond precision, SRC and
// DST ip:port ([ip]:port for IPv6). The PSN is decimal, as tshark shows it;
// QPs, keys, addresses and atomic operands are hex. pkey is shown only when
// it is not the default 0xFFFF. The extension headers are
//
//	reth va=0x.. rkey=0x.. len=N
//	aeth ACK [credits=N] msn=N | aeth RNR NAK timer=N msn=N | aeth NAK <code> msn=N
//	atomic va=0x.. rkey=0x.. swap=0x.. cmp=0x..   (CmpSwap)
//	atomic va=0x.. rkey=0x.. add=0x..             (FetchAdd)
//	orig=0x..                                     (AtomicAckETH)
//	imm=0xXXXXXXXX  inv rkey=0x..  deth qkey=0x.. srcqp=0xQQQQQQ
//	feth placement=global|persistence|global+persistence selectivity=range|mr
//
// (a reserved FETH value shows as its number). payload counts the payload
// bytes without the pad. A frame to the RoCEv2
// port that does not decode is shown as
//
//	#N T SRC > DST unknown: REASON [opcode=0xNN] [caplen=N len=N]
//
// with REASON a roce/wire drop counter name (bad_opcode, truncated, ...).

// AppendText appends r's line, without a newline, to dst. Records of
// KindOther give nothing.
func AppendText(dst []byte, r *Record) []byte {
	if r.Kind == KindOther {
		return dst
	}
	dst = append(dst, '#')
	dst = strconv.AppendInt(dst, int64(r.Index), 10)
	dst = append(dst, ' ')
	dst = iwdecode.AppendSeconds(dst, r.Time)
	dst = append(dst, ' ')
	dst = appendEndpoints(dst, r)
	if r.VLAN >= 0 {
		dst = append(dst, " vlan="...)
		dst = strconv.AppendInt(dst, int64(r.VLAN), 10)
	}
	if r.Kind == KindUnknown {
		dst = append(dst, " unknown: "...)
		dst = append(dst, r.Err.Counter()...)
		if r.Opcode >= 0 {
			dst = append(dst, " opcode="...)
			dst = iwdecode.AppendHex(dst, uint64(r.Opcode), 2)
		}
		if r.CapLen != r.Len {
			dst = append(dst, " caplen="...)
			dst = strconv.AppendInt(dst, int64(r.CapLen), 10)
			dst = append(dst, " len="...)
			dst = strconv.AppendInt(dst, int64(r.Len), 10)
		}
		return dst
	}
	p := &r.Frame.Packet
	b := p.BTH()
	dst = append(dst, ' ')
	dst = append(dst, p.Info().Name...)
	dst = append(dst, " qp="...)
	dst = iwdecode.AppendHex(dst, uint64(b.DestQP()), 6)
	dst = append(dst, " psn="...)
	dst = strconv.AppendUint(dst, uint64(b.PSN()), 10)
	dst = appendFlag(dst, b.SE(), " se")
	dst = appendFlag(dst, b.AckReq(), " ackreq")
	dst = appendFlag(dst, b.MigReq(), " migreq")
	dst = appendFlag(dst, b.FECN(), " fecn")
	dst = appendFlag(dst, b.BECN(), " becn")
	if n := b.PadCnt(); n > 0 {
		dst = append(dst, " pad="...)
		dst = strconv.AppendInt(dst, int64(n), 10)
	}
	if k := b.PKey(); k != wire.DefaultPKey {
		dst = append(dst, " pkey="...)
		dst = iwdecode.AppendHex(dst, uint64(k), 4)
	}
	dst = appendExtText(dst, p)
	dst = append(dst, " payload="...)
	dst = strconv.AppendInt(dst, int64(len(p.Payload())), 10)
	if r.ICRCOK {
		return append(dst, " icrc=ok"...)
	}
	return append(dst, " icrc=BAD"...)
}

// appendExtText appends the extension headers in wire order.
func appendExtText(dst []byte, p *wire.Packet) []byte {
	for _, h := range p.Info().Hdrs {
		switch h {
		case wire.HdrRETH:
			v := p.RETH()
			dst = append(dst, " reth va="...)
			dst = iwdecode.AppendHex(dst, v.VA(), 0)
			dst = append(dst, " rkey="...)
			dst = iwdecode.AppendHex(dst, uint64(v.RKey()), 0)
			dst = append(dst, " len="...)
			dst = strconv.AppendUint(dst, uint64(v.DMALength()), 10)
		case wire.HdrAETH:
			v := p.AETH()
			dst = append(dst, " aeth "...)
			dst = append(dst, v.Syndrome().String()...)
			dst = append(dst, " msn="...)
			dst = strconv.AppendUint(dst, uint64(v.MSN()), 10)
		case wire.HdrAtomicETH:
			v := p.AtomicETH()
			dst = append(dst, " atomic va="...)
			dst = iwdecode.AppendHex(dst, v.VA(), 0)
			dst = append(dst, " rkey="...)
			dst = iwdecode.AppendHex(dst, uint64(v.RKey()), 0)
			if p.Info().Kind == wire.KindFetchAdd {
				dst = append(dst, " add="...)
				dst = iwdecode.AppendHex(dst, v.SwapAdd(), 0)
			} else {
				dst = append(dst, " swap="...)
				dst = iwdecode.AppendHex(dst, v.SwapAdd(), 0)
				dst = append(dst, " cmp="...)
				dst = iwdecode.AppendHex(dst, v.Compare(), 0)
			}
		case wire.HdrAtomicAckETH:
			dst = append(dst, " orig="...)
			dst = iwdecode.AppendHex(dst, p.AtomicAckETH().OrigData(), 0)
		case wire.HdrImmDt:
			dst = append(dst, " imm="...)
			dst = iwdecode.AppendHex(dst, uint64(p.ImmDt().Imm()), 8)
		case wire.HdrIETH:
			dst = append(dst, " inv rkey="...)
			dst = iwdecode.AppendHex(dst, uint64(p.IETH().RKey()), 0)
		case wire.HdrDETH:
			v := p.DETH()
			dst = append(dst, " deth qkey="...)
			dst = iwdecode.AppendHex(dst, uint64(v.QKey()), 0)
			dst = append(dst, " srcqp="...)
			dst = iwdecode.AppendHex(dst, uint64(v.SrcQP()), 6)
		case wire.HdrFETH:
			v := p.FETH()
			dst = append(dst, " feth placement="...)
			dst = appendPlacement(dst, v.PlacementType())
			dst = append(dst, " selectivity="...)
			switch sel := v.Selectivity(); sel {
			case wire.FlushSelectRange:
				dst = append(dst, "range"...)
			case wire.FlushSelectWholeMR:
				dst = append(dst, "mr"...)
			default:
				dst = strconv.AppendUint(dst, uint64(sel), 10)
			}
		}
	}
	return dst
}

// appendPlacement names a FLUSH's placement types, IBTA 1.5's global
// visibility and persistence; a value with a reserved bit, or none, is
// shown as its number.
func appendPlacement(dst []byte, plt uint8) []byte {
	switch plt {
	case wire.FlushGlobalVisibility:
		return append(dst, "global"...)
	case wire.FlushPersistence:
		return append(dst, "persistence"...)
	case wire.FlushGlobalVisibility | wire.FlushPersistence:
		return append(dst, "global+persistence"...)
	}
	return strconv.AppendUint(dst, uint64(plt), 10)
}

func appendEndpoints(dst []byte, r *Record) []byte {
	if !r.Src.IsValid() {
		return append(dst, "? > ?"...)
	}
	dst = r.Src.AppendTo(dst)
	dst = append(dst, " > "...)
	return r.Dst.AppendTo(dst)
}

func appendFlag(dst []byte, on bool, s string) []byte {
	if on {
		return append(dst, s...)
	}
	return dst
}
