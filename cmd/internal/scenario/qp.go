package scenario

import (
	"fmt"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
)

// end is one QP of a scenario with its completion queue (send and receive
// share it) and the completions seen so far.
type end struct {
	s    *stage
	n    *node
	qp   *nic.QP
	cq   *nic.CQ
	psn  uint32
	seen []verbs.WC
}

// qpOptions are the attributes a scenario sets on both QPs of a pair.
type qpOptions struct {
	typ         verbs.QPType
	retryCnt    uint8 // RC: transport retries before RETRY_EXC_ERR
	rnrRetry    uint8 // RC: RNR retries (7: for ever)
	minRNRTimer uint8 // RC: the responder's RNR NAK timer code
	timeout     uint8 // RC: local ACK timeout, 4.096 µs × 2^timeout
}

// Initial PSNs: fixed, so that every run shows the same numbers.
var initialPSN = [2]uint32{0x00a000, 0x00b000}

// pair creates one QP on each NIC and connects them (RC, UC) or readies
// them (UD), with o's attributes.
func (s *stage) pair(o qpOptions) (*end, *end, error) {
	var ends [2]*end
	for i, n := range s.nodes {
		cq, err := n.dev.CreateCQ(64)
		if err != nil {
			return nil, nil, err
		}
		qp, err := n.dev.CreateQP(n.pd, nic.QPInit{Type: o.typ, SendCQ: cq, RecvCQ: cq,
			Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			return nil, nil, err
		}
		ends[i] = &end{s: s, n: n, qp: qp, cq: cq, psn: initialPSN[i]}
	}
	for i, e := range ends {
		if err := e.connect(ends[1-i], o); err != nil {
			return nil, nil, fmt.Errorf("scenario: connect %s: %w", e.n.name, err)
		}
	}
	return ends[0], ends[1], nil
}

// qkey is the Q_Key of the scenarios' UD QPs.
const qkey = 0x11111111

// connect walks e through INIT, RTR and RTS towards peer.
func (e *end) connect(peer *end, o qpOptions) error {
	init := verbs.QPAttr{State: verbs.QPSInit, PortNum: 1}
	mask := verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort
	switch o.typ {
	case verbs.QPTypeUD:
		init.QKey, mask = qkey, mask|verbs.AttrQKey
	case verbs.QPTypeUC:
		init.AccessFlags, mask = memory.RemoteWrite, mask|verbs.AttrAccessFlags
	default:
		init.AccessFlags, mask = memory.RemoteWrite|memory.RemoteRead|memory.RemoteAtomic, mask|verbs.AttrAccessFlags
	}
	if err := e.qp.Modify(&init, mask); err != nil {
		return err
	}
	if o.typ == verbs.QPTypeUD {
		if err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTR}, verbs.AttrState); err != nil {
			return err
		}
		return e.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTS, SQPSN: e.psn}, verbs.AttrState|verbs.AttrSQPSN)
	}
	rtr := verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: peer.qp.QPN(), RQPSN: peer.psn,
		AV: peer.n.av()}
	mask = verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN
	if o.typ == verbs.QPTypeRC {
		rtr.MaxDestRdAtomic, rtr.MinRNRTimer = 4, o.minRNRTimer
		mask |= verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer
	}
	if err := e.qp.Modify(&rtr, mask); err != nil {
		return err
	}
	rts := verbs.QPAttr{State: verbs.QPSRTS, SQPSN: e.psn}
	mask = verbs.AttrState | verbs.AttrSQPSN
	if e.s.clk == nil {
		o.timeout = max(o.timeout, tapMinTimeout)
	}
	if o.typ == verbs.QPTypeRC {
		rts.Timeout, rts.RetryCnt, rts.RNRRetry, rts.MaxRdAtomic = o.timeout, o.retryCnt, o.rnrRetry, 4
		mask |= verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrMaxQPRdAtomic
	}
	return e.qp.Modify(&rts, mask)
}

// av is the address vector that reaches n.
func (n *node) av() verbs.AddressVector {
	return verbs.AddressVector{DGID: verbs.GIDFromAddr(n.addr), SGIDIndex: n.gid, HopLimit: 64, PortNum: 1, DMAC: n.mac}
}

// post posts wr on e's send queue and narrates it.
func (e *end) post(wr *verbs.SendWR) error {
	wr.Flags |= verbs.SendSignaled
	e.s.say("%s qp %#06x posts %s wr_id=%d (%d bytes)", e.n.name, e.qp.QPN(), wr.Opcode, wr.ID, sglLen(wr.SGL))
	return e.qp.PostSend(wr)
}

// recv posts a receive of n bytes at off in e's buffer.
func (e *end) recv(id uint64, off, n int) error {
	e.s.say("%s qp %#06x posts a receive wr_id=%d (%d bytes)", e.n.name, e.qp.QPN(), id, n)
	return e.qp.PostRecv(&verbs.RecvWR{ID: id, SGL: e.n.sge(off, n)})
}

func sglLen(sgl []verbs.SGE) int {
	n := 0
	for _, s := range sgl {
		n += int(s.Length)
	}
	return n
}

// await runs the virtual clock until e has count completions more than it
// had, or nothing is left to happen; it narrates each and returns them.
func (e *end) await(count int) []verbs.WC {
	want := len(e.seen) + count
	deadline := e.s.now() + awaitLimit
	wcs := make([]verbs.WC, 16)
	for len(e.seen) < want {
		n := e.cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			e.seen = append(e.seen, wc)
			e.s.say("%s qp %#06x completion: wr_id=%d %s %s bytes=%d", e.n.name, e.qp.QPN(), wc.WRID, wc.Opcode, wc.Status, wc.ByteLen)
		}
		if n > 0 {
			continue
		}
		if !e.s.step(deadline) {
			e.s.say("%s qp %#06x: nothing more happens (%d of %d completions)", e.n.name, e.qp.QPN(), len(e.seen), want)
			break
		}
	}
	return e.seen[min(len(e.seen), want-count):]
}

// awaitLimit is how long await waits on the real clock (a TAP stage) for
// completions that do not come: far beyond every scenario's timers.
const awaitLimit = 3 * time.Second

// step lets the next thing happen: the virtual clock's next event (false
// when none is left), or on the real clock a short sleep (false once
// deadline has passed).
func (s *stage) step(deadline time.Duration) bool {
	if s.clk != nil {
		return s.clk.Step()
	}
	time.Sleep(50 * time.Microsecond)
	return s.now() < deadline
}

// tapStretch stretches a scenario's waits on the real clock: on a busy
// machine a frame can take a millisecond or more to cross a TAP stage's
// bridge, and a wait that gives the peer time to act (rnr: the SEND meets
// no receive) must outlast that.
const tapStretch = 10

// tapMinTimeout is the least local ACK timeout of a TAP stage's RC QPs
// (4.096 µs × 2^14: 67 ms): on the real clock of a busy machine an ACK
// can take longer than the simulated form's 1 ms, and a spurious timeout
// would show a retry the scenario is not about. The timeouts a scenario
// shows still happen, later.
const tapMinTimeout = 14

// settle lets the run's last ACKs go out and the timers that find nothing
// to do expire, before the counters are read.
func (s *stage) settle() {
	if s.clk == nil {
		time.Sleep(100 * time.Millisecond)
		return
	}
	s.clk.RunFor(100 * time.Millisecond)
}

// wait lets d of time pass (stretched on the real clock, see tapStretch).
func (s *stage) wait(d time.Duration) {
	if s.clk == nil {
		time.Sleep(tapStretch * d)
		return
	}
	s.clk.RunFor(d)
}

// state narrates e's QP state.
func (e *end) state() {
	attr, err := e.qp.Query()
	if err != nil {
		e.s.say("%s qp %#06x: query: %v", e.n.name, e.qp.QPN(), err)
		return
	}
	e.s.say("%s qp %#06x is in state %s", e.n.name, e.qp.QPN(), attr.State)
}

// sync orders the memory accesses of e's engine and of the steps: on TAP
// NICs the engine reads and writes the buffer on goroutines of its own,
// ordered with the steps only through the kernel (a frame sent, a frame
// received), which Go's race detector cannot see; taking the QP's lock
// (a query) makes the order visible. It says nothing.
func (e *end) sync() { _, _ = e.qp.Query() }
