package ladder

import (
	"net/netip"
	"strconv"
	"strings"

	iwdecode "github.com/rnic/rnic/iwarp/decode"
	iwire "github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/roce/cm/mad"
	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/roce/wire"
)

// classifier remembers what was sent, to tell retransmissions and
// duplicates from first sendings.
type classifier struct {
	requests  map[psnKey]bool // request PSNs sent, per direction and QP
	responses map[psnKey]bool // response and ACK PSNs sent, per direction, QP, opcode and syndrome
}

type psnKey struct {
	src, dst netip.Addr
	qp       uint32
	psn      uint32
	op       int // opcode for responses, -1 for requests
}

func newClassifier() *classifier {
	return &classifier{requests: map[psnKey]bool{}, responses: map[psnKey]bool{}}
}

// frame makes the event of one frame: RoCE frames from their record,
// other frames as TCP or non-IP frames (iWARP records are added later by
// addIWARP, when the reassembler completes them).
func (c *classifier) frame(data []byte, r *decode.Record, path string) Event {
	ev := Event{Frame: r.Index, Time: r.Time, Src: r.Src, Dst: r.Dst, SrcQP: -1, DstQP: -1, psn: -1}
	ev.SrcHost, ev.DstHost = hostName(r.Src), hostName(r.Dst)
	switch r.Kind {
	case decode.KindRoCE:
		c.roce(&ev, r)
	case decode.KindUnknown:
		ev.Class = ClassUnknown
		ev.Decode = string(decode.AppendText(nil, r))
		ev.Label, ev.Sub = splitLabel(afterEndpoints(ev.Decode))
	default:
		other(&ev, data)
	}
	if r.Kind != decode.KindOther {
		if j, err := decode.AppendJSON(nil, path, r); err == nil {
			ev.JSON = string(j)
		}
	}
	return ev
}

func hostName(a netip.AddrPort) string {
	if !a.IsValid() {
		return ""
	}
	return a.Addr().String()
}

// roce classifies a decoded RoCEv2 frame and labels it from its decode line.
func (c *classifier) roce(ev *Event, r *decode.Record) {
	p := &r.Frame.Packet
	info, b := p.Info(), p.BTH()
	ev.DstQP, ev.psn = int(b.DestQP()), int64(b.PSN())
	ev.BadCRC = !r.ICRCOK
	ev.Decode = string(decode.AppendText(nil, r))
	ev.Label, ev.Sub = splitLabel(afterEndpoints(ev.Decode))
	if info.Has(wire.HdrDETH) {
		ev.SrcQP = int(p.DETH().SrcQP())
	}
	ev.Class = ClassRequest
	if info.Response || info.Kind == wire.KindCNP {
		ev.Class = ClassResponse
	}
	if info.Has(wire.HdrAETH) {
		s := p.AETH().Syndrome()
		ev.aeth = uint8(s)
		switch s.Type() {
		case wire.AckTypeNAK:
			ev.Class = ClassNAK
		case wire.AckTypeRNRNAK:
			ev.Class = ClassRNR
		default:
			if info.Kind == wire.KindAck {
				ev.Class = ClassACK
			}
		}
		if info.Kind == wire.KindAck || s.Type() != wire.AckTypeACK {
			ev.Label += " " + s.String()
		}
	}
	if ev.DstQP == 1 && info.Kind == wire.KindSend {
		if m, err := mad.ParseMAD(p.Payload()); err == nil {
			ev.Class = ClassSetup
			ev.Label = "CM " + m.AttrID().String() + " " + ev.Label
		}
	}
	c.repeat(ev, r.Src.Addr(), r.Dst.Addr(), info, b)
	if info.Pos == wire.PosMiddle {
		ev.run = ev.SrcHost + ">" + ev.DstHost + "/" + strconv.Itoa(ev.DstQP) + "/" + info.Name
	}
	ev.Spec, ev.SpecURL = roceSpec(info, ev.Class)
}

// repeat marks retransmitted requests and duplicate responses.
func (c *classifier) repeat(ev *Event, src, dst netip.Addr, info *wire.OpInfo, b wire.BTH) {
	k := psnKey{src: src, dst: dst, qp: b.DestQP(), psn: b.PSN(), op: -1}
	if ev.Class == ClassRequest && info.Transport == wire.TransportRC {
		ev.Retx = c.requests[k]
		c.requests[k] = true
		return
	}
	if info.Response {
		k.op = int(b[0]) << 8 // an ACK after a NAK of the same PSN is news
		if info.Has(wire.HdrAETH) {
			k.op |= int(ev.aeth)
		}
		ev.Dup = c.responses[k]
		c.responses[k] = true
	}
}

// addIWARP adds a record of the iWARP reassembler to the frame that
// completed it. The first record names the arrow; more are counted.
func (c *classifier) addIWARP(ev *Event, rec *iwdecode.Record) {
	line := string(iwdecode.AppendText(nil, rec))
	ev.records++
	if ev.records > 1 {
		ev.Decode += "\n" + line
		ev.Note = "+" + strconv.Itoa(ev.records-1) + " more"
	} else {
		ev.Decode += "\n" + line // after the TCP segment's own line
		ev.Label, ev.Sub = splitLabel(afterEndpoints(line))
		ev.Class = iwarpClass(rec)
		ev.Spec, ev.SpecURL = iwarpSpec(rec)
		if rec.Kind == iwdecode.KindFPDU {
			ev.run = iwarpRun(ev, rec)
		}
	}
	if j, err := iwdecode.AppendJSON(nil, "", rec); err == nil {
		if ev.JSON != "" {
			ev.JSON += "\n"
		}
		ev.JSON += string(j)
	}
	ev.FPDU = ev.FPDU || rec.FPDU
	ev.BadCRC = ev.BadCRC || rec.BadCRC()
}

func iwarpClass(rec *iwdecode.Record) Class {
	switch rec.Kind {
	case iwdecode.KindMPA:
		return ClassSetup
	case iwdecode.KindFPDU:
		if rec.Segment.Info().Response {
			return ClassResponse
		}
		return ClassRequest
	}
	return ClassUnknown
}

// iwarpRun is the run key of a DDP segment that is not its message's
// last: the segments of one tagged message share the STag, those of one
// untagged message the queue and MSN.
func iwarpRun(ev *Event, rec *iwdecode.Record) string {
	h := rec.Segment.DDP()
	if h.Last() {
		return ""
	}
	k := rec.Src.String() + ">" + rec.Dst.String() + "/" + rec.Segment.Info().Name
	if h.Tagged() {
		return k + "/stag" + strconv.FormatUint(uint64(h.STag()), 16)
	}
	return k + "/q" + strconv.Itoa(int(h.QN())) + "/m" + strconv.Itoa(int(h.MSN()))
}

// afterEndpoints drops "#N T SRC > DST [vlan=V] " from a decode line.
func afterEndpoints(line string) string {
	f := strings.SplitN(line, " ", 6)
	if len(f) < 6 {
		return line
	}
	rest := f[5]
	if strings.HasPrefix(rest, "vlan=") {
		if i := strings.IndexByte(rest, ' '); i >= 0 {
			rest = rest[i+1:]
		}
	}
	return rest
}

// splitLabel splits what follows the endpoints in a decode line into the
// message (the leading words, which name it, and the PSN) and its fields.
// A verified checksum is left out: only a bad one is news.
func splitLabel(s string) (label, sub string) {
	var head, tail []string
	named := false
	for _, w := range strings.Fields(s) {
		switch {
		case w == "icrc=ok" || w == "crc=ok" || w == "crc=off":
		case !named && !strings.Contains(w, "=") && !strings.HasPrefix(w, "("):
			head = append(head, w)
		case strings.HasPrefix(w, "psn="):
			named = true
			head = append(head, w)
		default:
			named = true
			tail = append(tail, w)
		}
	}
	return strings.Join(head, " "), strings.Join(tail, " ")
}

// Spec references. IBTA Vol 1 is not freely linkable section by section;
// the link goes to the specification's page and the name says where.
const (
	ibtaURL    = "https://www.infinibandta.org/ibta-specification/"
	rfcBaseURL = "https://www.rfc-editor.org/rfc/"
)

func roceSpec(info *wire.OpInfo, cl Class) (string, string) {
	switch {
	case cl == ClassSetup:
		return "IBTA Vol 1 §12.6 (CM messages), Annex A17 (RoCEv2)", ibtaURL
	case info.Kind == wire.KindAck || cl == ClassNAK || cl == ClassRNR:
		return "IBTA Vol 1 §9.7.5.2 (ACK/NAK generation, AETH Tables 43-45)", ibtaURL
	case info.Kind == wire.KindCNP:
		return "IBTA Vol 1 Annex A17 (RoCEv2 CNP)", ibtaURL
	}
	return "IBTA Vol 1 §9.4 (transport functions: " + info.Name + ")", ibtaURL
}

func iwarpSpec(rec *iwdecode.Record) (string, string) {
	switch {
	case rec.Kind == iwdecode.KindMPA:
		return "RFC 5044 §7.1 (MPA Request/Reply), RFC 6581", rfcBaseURL + "rfc5044#section-7.1"
	case rec.Kind != iwdecode.KindFPDU:
		return "RFC 5044 (MPA framing)", rfcBaseURL + "rfc5044"
	}
	op := rec.Segment.Opcode()
	switch {
	case op >= iwire.OpImmediate:
		return "RFC 7306 (" + rec.Segment.Info().Name + ")", rfcBaseURL + "rfc7306"
	case op == iwire.OpTerminate:
		return "RFC 5040 §5.4 (Terminate)", rfcBaseURL + "rfc5040#section-5.4"
	}
	return "RFC 5040 §5 (" + rec.Segment.Info().Name + ")", rfcBaseURL + "rfc5040#section-5"
}
