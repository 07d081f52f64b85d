// The steps a case is made of: frames the tester sends, frames it expects
// (or must not see), and what the DUT's application does through the
// agent.

package conform

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// Default wait bounds (scaled by Config.Slow). Expect waits long, since
// only a failing DUT makes it wait at all; ExpectNone's window is what a
// responder gets to answer a packet it must stay silent about.
const (
	DefaultWithin = 2 * time.Second
	DefaultQuiet  = 300 * time.Millisecond
)

// Send sends the packets in order.
type Send []Pkt

func (s Send) Do(r *Run) error {
	for i := range s {
		no, err := r.Port.Send(s[i].Build(r))
		if err != nil {
			return err
		}
		r.Note("#%d→%v", no, s[i].String())
	}
	return nil
}

func (s Send) String() string {
	parts := make([]string, len(s))
	for i := range s {
		parts[i] = s[i].String()
	}
	return "send " + strings.Join(parts, ", ")
}

// Expect wants the DUT's next frame within Within (DefaultWithin if
// zero) to pass every check. Skip, if set, passes over frames it
// accepts (counted in the evidence). Every frame taken must be a
// well-formed RoCEv2 frame for the tester's QP.
type Expect struct {
	What   string // names the expectation ("ACK for the duplicate")
	Want   []Check
	Within time.Duration
	Skip   func(r *Run, f *Frame) bool
}

func (e Expect) Do(r *Run) error {
	within := e.Within
	if within == 0 {
		within = DefaultWithin
	}
	deadline := time.Now().Add(r.Bound(within))
	for {
		f, ok := r.next(time.Until(deadline))
		if !ok {
			return fmt.Errorf("no frame from the DUT within %v", r.Bound(within))
		}
		if e.Skip != nil && f.Err == nil && e.Skip(r, &f) {
			r.Note("%s skipped", describe(r, &f))
			continue
		}
		r.Note("%s", describe(r, &f))
		if err := wellFormed(r, &f); err != nil {
			return err
		}
		for _, c := range e.Want {
			if err := c.F(r, &f); err != nil {
				return fmt.Errorf("frame %d: %w", f.No, err)
			}
		}
		r.Last = f
		return nil
	}
}

func (e Expect) String() string { return "expect " + what(e.What, e.Want) }

func what(s string, cs []Check) string {
	if s != "" {
		return s
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// ExpectNone wants no DUT frame passing every check of Match (any frame
// if Match is empty) within For (DefaultQuiet if zero). Frames that do
// not match stay for the next Expect.
type ExpectNone struct {
	What  string
	Match []Check
	For   time.Duration
}

func (e ExpectNone) Do(r *Run) error {
	d := e.For
	if d == 0 {
		d = DefaultQuiet
	}
	deadline := time.Now().Add(r.Bound(d))
	var keep []Frame
	defer func() { r.pending = append(keep, r.pending...) }()
	for {
		f, ok := r.next(time.Until(deadline))
		if !ok {
			r.Note("none for %v", r.Bound(d))
			return nil
		}
		if matchAll(r, &f, e.Match) {
			r.Note("%s", describe(r, &f))
			return fmt.Errorf("frame %d (%v) is one the DUT must not send", f.No, f.Op())
		}
		keep = append(keep, f)
	}
}

func (e ExpectNone) String() string { return "expect no " + what(e.What, e.Match) }

func matchAll(r *Run, f *Frame, cs []Check) bool {
	if f.Err != nil {
		return len(cs) == 0
	}
	for _, c := range cs {
		if c.F(r, f) != nil {
			return false
		}
	}
	return true
}

// next returns the next DUT frame: one an ExpectNone passed over, else a
// new one. Frames for another tester QPN (an earlier case's QP, still
// sending as it was destroyed) are passed over.
func (r *Run) next(d time.Duration) (Frame, bool) {
	if len(r.pending) > 0 {
		f := r.pending[0]
		r.pending = r.pending[1:]
		return f, true
	}
	deadline := time.Now().Add(d)
	for {
		d := time.Until(deadline)
		if d <= 0 {
			return Frame{}, false
		}
		f, ok := r.Port.Recv(d)
		if !ok || f.Err != nil || f.H.BTH.DestQP == r.TesterQPN || f.Op() == wire.CNP {
			return f, ok
		}
	}
}

// Drain discards the DUT's frames for For (nothing is asserted).
type Drain struct{ For time.Duration }

func (d Drain) Do(r *Run) error {
	r.pending = nil
	deadline := time.Now().Add(r.Bound(d.For))
	n := 0
	for {
		if _, ok := r.Port.Recv(time.Until(deadline)); !ok {
			break
		}
		n++
	}
	if n > 0 {
		r.Note("%d frames drained", n)
	}
	return nil
}

func (d Drain) String() string { return fmt.Sprintf("drain %v", d.For) }

// Sleep waits.
type Sleep time.Duration

func (s Sleep) Do(r *Run) error { time.Sleep(r.Bound(time.Duration(s))); return nil }

func (s Sleep) String() string { return fmt.Sprintf("sleep %v", time.Duration(s)) }

// Seg is a piece of a named MR.
type Seg struct {
	MR  string
	Off uint64
	Len uint32
}

func (s Seg) sge(r *Run) agentproto.SGE {
	mr := r.MR(s.MR)
	return agentproto.SGE{Addr: mr.Addr + s.Off, Len: s.Len, LKey: mr.LKey}
}

// WR is a send WR the DUT posts. Remote and RKey address the tester's
// memory (any values: the tester plays the responder).
type WR struct {
	ID         uint64
	Op         verbs.WROpcode
	Flags      verbs.SendFlags
	Local      []Seg
	Remote     uint64
	RKey       uint32
	Imm        uint32
	InvRKey    uint32
	CompareAdd uint64
	Swap       uint64
}

// Post has the DUT post send WRs (signaled).
type Post []WR

func (p Post) Do(r *Run) error {
	wrs := make([]agentproto.SendWR, len(p))
	for i, w := range p {
		wrs[i] = agentproto.SendWR{ID: w.ID, Opcode: uint8(w.Op), Flags: uint8(w.Flags | verbs.SendSignaled),
			Imm: w.Imm, InvRKey: w.InvRKey, RemoteAddr: w.Remote, RKey: w.RKey, CompareAdd: w.CompareAdd, Swap: w.Swap}
		for _, s := range w.Local {
			wrs[i].SGL = append(wrs[i].SGL, s.sge(r))
		}
	}
	return r.Agent.PostSend(r.QP.H, wrs...)
}

func (p Post) String() string {
	ops := make([]string, len(p))
	for i, w := range p {
		ops[i] = w.Op.String()
	}
	return "DUT posts " + strings.Join(ops, ", ")
}

// PostRecv has the DUT post a receive WR of Seg (none if Len is 0).
type PostRecv struct {
	ID  uint64
	Seg Seg
}

func (p PostRecv) Do(r *Run) error {
	wr := agentproto.RecvWR{ID: p.ID}
	if p.Seg.Len > 0 {
		wr.SGL = []agentproto.SGE{p.Seg.sge(r)}
	}
	return r.Agent.PostRecv(r.QP.H, wr)
}

func (p PostRecv) String() string { return fmt.Sprintf("DUT posts a receive of %d bytes", p.Seg.Len) }

// Opt is an optional expected value: checked only when Set.
type Opt[T comparable] struct {
	V   T
	Set bool
}

// Is is an expected value.
func Is[T comparable](v T) Opt[T] { return Opt[T]{v, true} }

func (o Opt[T]) ok(v T) bool { return !o.Set || o.V == v }

// WCWant is an expected completion: Status always (or, with AnyError,
// any status but SUCCESS), the rest when set.
type WCWant struct {
	Status   verbs.WCStatus
	AnyError bool
	ID       Opt[uint64]
	Opcode   Opt[verbs.WCOpcode]
	Len      Opt[uint32]
	Imm      Opt[uint32]
	Flags    Opt[verbs.WCFlags]
	// InvRKey wants the invalidated rkey of the named MR.
	InvMR string
}

func (w WCWant) match(r *Run, wc agentproto.WC) error {
	st := verbs.WCStatus(wc.Status)
	flags := verbs.WCFlags(wc.Flags)
	if r.Case != nil && r.Case.Setup.QPType != verbs.QPTypeUD {
		// IBV_WC_GRH is defined for UD only: elsewhere (rxe sets it on
		// every RoCE receive) it says nothing the spec constrains.
		flags &^= verbs.WCFlagGRH
	}
	ok := (st == w.Status || w.AnyError && st != verbs.WCSuccess) && w.ID.ok(wc.ID) && w.Opcode.ok(verbs.WCOpcode(wc.Opcode)) &&
		w.Len.ok(wc.ByteLen) && w.Imm.ok(wc.Imm) && w.Flags.ok(flags)
	if w.InvMR != "" && wc.InvRKey != r.MR(w.InvMR).RKey {
		ok = false
	}
	if !ok {
		return fmt.Errorf("completion %s, want %s", wcString(wc), w.String())
	}
	return nil
}

func (w WCWant) String() string {
	s := w.Status.String()
	if w.AnyError {
		s = "an error"
	}
	if w.Opcode.Set {
		s += " " + w.Opcode.V.String()
	}
	if w.Len.Set {
		s += fmt.Sprintf(" len %d", w.Len.V)
	}
	if w.Imm.Set {
		s += fmt.Sprintf(" imm %#x", w.Imm.V)
	}
	if w.Flags.Set {
		s += fmt.Sprintf(" flags %#x", w.Flags.V)
	}
	return s
}

func wcString(wc agentproto.WC) string {
	return fmt.Sprintf("wr_id %d %s %s len %d imm %#x flags %#x inv %#x", wc.ID, wc.StatusName, wc.OpcodeName,
		wc.ByteLen, wc.Imm, wc.Flags, wc.InvRKey)
}

// Poll wants the next completions of the DUT's CQ, in order, within
// Within (DefaultWithin if zero).
type Poll struct {
	Want   []WCWant
	Within time.Duration
}

func (p Poll) Do(r *Run) error {
	within := p.Within
	if within == 0 {
		within = DefaultWithin
	}
	wcs, err := r.Agent.PollCQ(r.CQ, len(p.Want), r.Bound(within))
	if err != nil {
		return err
	}
	for i, w := range p.Want {
		if i >= len(wcs) {
			return fmt.Errorf("%d completions within %v, want %d (next: %v)", len(wcs), r.Bound(within), len(p.Want), w)
		}
		r.Note("wc %s", wcs[i].StatusName)
		if err := w.match(r, wcs[i]); err != nil {
			return err
		}
	}
	return nil
}

func (p Poll) String() string {
	parts := make([]string, len(p.Want))
	for i, w := range p.Want {
		parts[i] = w.String()
	}
	return "poll " + strings.Join(parts, ", ")
}

// PollNone wants no completion on the DUT's CQ within For (DefaultQuiet
// if zero).
type PollNone struct{ For time.Duration }

func (p PollNone) Do(r *Run) error {
	d := p.For
	if d == 0 {
		d = DefaultQuiet
	}
	wcs, err := r.Agent.PollCQ(r.CQ, 1, r.Bound(d))
	if err != nil {
		return err
	}
	if len(wcs) > 0 {
		return fmt.Errorf("unexpected completion %s", wcString(wcs[0]))
	}
	r.Note("no completion")
	return nil
}

func (p PollNone) String() string { return "poll: no completion" }

// QPState wants the DUT's QP in a state.
type QPState verbs.QPState

func (q QPState) Do(r *Run) error {
	a, err := r.Agent.QueryQP(r.QP.H)
	if err != nil {
		return err
	}
	if a.State == nil || verbs.QPState(*a.State) != verbs.QPState(q) {
		got := "unknown"
		if a.State != nil {
			got = verbs.QPState(*a.State).String()
		}
		return fmt.Errorf("QP state %s, want %s", got, verbs.QPState(q))
	}
	r.Note("qp %s", verbs.QPState(q))
	return nil
}

func (q QPState) String() string { return "QP state " + verbs.QPState(q).String() }

// Memory wants bytes of a DUT MR.
type Memory struct {
	MR   string
	Off  uint64
	Want []byte
}

func (m Memory) Do(r *Run) error {
	got, err := r.Agent.ReadMR(r.MR(m.MR).H, m.Off, len(m.Want))
	if err != nil {
		return err
	}
	if !bytes.Equal(got, m.Want) {
		return fmt.Errorf("%s[%d:%d] = %s, want %s", m.MR, m.Off, m.Off+uint64(len(m.Want)), short(got), short(m.Want))
	}
	return nil
}

func (m Memory) String() string { return fmt.Sprintf("memory %s[%d:+%d]", m.MR, m.Off, len(m.Want)) }

// WriteMem writes bytes into a DUT MR.
type WriteMem struct {
	MR   string
	Off  uint64
	Data []byte
}

func (w WriteMem) Do(r *Run) error { return r.Agent.WriteMR(r.MR(w.MR).H, w.Off, w.Data) }

func (w WriteMem) String() string { return fmt.Sprintf("write %s[%d:+%d]", w.MR, w.Off, len(w.Data)) }

// Func is a step of the case's own.
type Func struct {
	Name string
	F    func(r *Run) error
}

func (f Func) Do(r *Run) error { return f.F(r) }

func (f Func) String() string { return f.Name }

// SkipOps is an Expect.Skip passing over frames with these opcodes (an
// ACK the DUT may or may not coalesce, say).
func SkipOps(ops ...wire.Opcode) func(r *Run, f *Frame) bool {
	return func(r *Run, f *Frame) bool { return containsOp(ops, f.Op()) }
}

// Event wants an asynchronous event of this type for the case's QP within
// Within (DefaultWithin if zero); events of other types or objects are
// passed over.
type Event struct {
	Type   verbs.AsyncEvent
	Within time.Duration
}

func (e Event) Do(r *Run) error {
	within := e.Within
	if within == 0 {
		within = DefaultWithin
	}
	deadline := time.Now().Add(r.Bound(within))
	var seen []string
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("no %v event for the QP within %v (seen: %v)", e.Type, r.Bound(within), seen)
		}
		evs, err := r.Agent.Events(left)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ev.QP == r.QP.H && verbs.AsyncEvent(ev.Type) == e.Type {
				r.Note("event %s", ev.Name)
				return nil
			}
			seen = append(seen, ev.Name)
		}
	}
}

func (e Event) String() string { return "async event " + e.Type.String() }

// Acks are the plain acknowledgements (ACK, NAK, RNR NAK): SkipOps(Acks...).
var Acks = []wire.Opcode{wire.RCAck}
