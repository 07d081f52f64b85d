// One end of a test: a device's PD, two CQs and one registered buffer, the
// QPs made on them, and the QP transitions ibv_rc_pingpong and
// ibv_ud_pingpong make. Every object is destroyed in t.Cleanup (which runs
// in reverse order of creation), so a device shared between subtests comes
// back clean, and a destroy that fails fails the test.

package ibvtest

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

const (
	// bufSize is each side's registered buffer.
	bufSize = 256 << 10
	// cqDepth is each CQ's size: room for the deepest test.
	cqDepth = 256
	// qkey is the UD tests' Q_Key (high bit clear: not a controlled one).
	qkey = 0x11111111
	// rnrTimer, timeout and retries are ibv_rc_pingpong's: 12 (0.64 ms),
	// 14 (67 ms), 7 and 7.
	rnrTimer = 12
	timeout  = 14
	retries  = 7
)

// side is one end of a test.
type side struct {
	t     *testing.T
	dev   ibv.Device
	addr  netip.Addr
	gid   int  // GID index of addr
	iwarp bool // Pair.IWARP: the wire carries no QP numbers
	attr  verbs.DeviceAttr
	port  verbs.PortAttr

	pd       ibv.PD
	mem      []byte // bufSize bytes, registered as mr
	mr       ibv.MR
	scq, rcq ibv.CQ
}

// newSide sets up one end on dev: a PD, a send and a receive CQ, and a
// buffer from AllocBuffer registered with every access the device allows.
func newSide(t *testing.T, dev ibv.Device, addr netip.Addr) *side {
	t.Helper()
	s := &side{t: t, dev: dev, addr: addr, attr: dev.Query()}
	var err error
	if s.port, err = dev.QueryPort(1); err != nil {
		t.Fatalf("%s: QueryPort(1): %v", dev.Name(), err)
	}
	if s.gid, err = dev.GIDIndex(addr); err != nil {
		t.Fatalf("%s: GIDIndex(%v): %v", dev.Name(), addr, err)
	}
	buf, err := dev.AllocBuffer(bufSize)
	if err != nil {
		t.Fatalf("%s: AllocBuffer: %v", dev.Name(), err)
	}
	t.Cleanup(func() { buf.Close() })
	s.mem = buf.Bytes()
	if s.pd, err = dev.AllocPD(); err != nil {
		t.Fatalf("%s: AllocPD: %v", dev.Name(), err)
	}
	cleanup(t, "DeallocPD", s.pd.Dealloc)
	access := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead
	if s.attr.AtomicCap != verbs.AtomicNone {
		access |= memory.RemoteAtomic
	}
	if s.mr, err = dev.RegMR(s.pd, s.mem, access); err != nil {
		t.Fatalf("%s: RegMR: %v", dev.Name(), err)
	}
	cleanup(t, "DeregMR", s.mr.Dereg)
	s.scq = s.cq()
	s.rcq = s.cq()
	return s
}

// newSides sets up both ends of p.
func newSides(t *testing.T, p Pair) (a, b *side) {
	t.Helper()
	a, b = newSide(t, p.A, p.AddrA), newSide(t, p.B, p.AddrB)
	a.iwarp, b.iwarp = p.IWARP, p.IWARP
	return a, b
}

// cleanup destroys an object at the end of the test and fails the test if
// that fails.
func cleanup(t *testing.T, what string, destroy func() error) {
	t.Cleanup(func() {
		if err := destroy(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	})
}

func (s *side) cq() ibv.CQ {
	s.t.Helper()
	cq, err := s.dev.CreateCQ(cqDepth)
	if err != nil {
		s.t.Fatalf("%s: CreateCQ(%d): %v", s.dev.Name(), cqDepth, err)
	}
	cleanup(s.t, "destroy CQ", cq.Destroy)
	return cq
}

// qp creates a QP on the side's CQs, with the capabilities asked (one SGE
// each way and 16 WRs when zero), receiving from srq if set.
func (s *side) qp(typ verbs.QPType, cp verbs.QPCap, srq ibv.SRQ) ibv.QP {
	s.t.Helper()
	if cp.MaxSendWR == 0 {
		cp.MaxSendWR = 16
	}
	if cp.MaxRecvWR == 0 && srq == nil {
		cp.MaxRecvWR = 16
	}
	if cp.MaxSendSGE == 0 {
		cp.MaxSendSGE = 1
	}
	if cp.MaxRecvSGE == 0 && srq == nil {
		cp.MaxRecvSGE = 1
	}
	qp, err := s.dev.CreateQP(s.pd, ibv.QPInit{Type: typ, SendCQ: s.scq, RecvCQ: s.rcq, SRQ: srq, Cap: cp})
	if err != nil {
		s.t.Fatalf("%s: CreateQP(%v, %+v): %v", s.dev.Name(), typ, cp, err)
	}
	cleanup(s.t, "destroy QP", qp.Destroy)
	got := qp.Cap()
	if got.MaxSendWR < cp.MaxSendWR || got.MaxRecvWR < cp.MaxRecvWR || got.MaxSendSGE < cp.MaxSendSGE ||
		got.MaxRecvSGE < cp.MaxRecvSGE || got.MaxInlineData < cp.MaxInlineData {
		s.t.Fatalf("%s: QP capabilities %+v, less than the %+v asked", s.dev.Name(), got, cp)
	}
	return qp
}

// sge names n bytes of the buffer from off.
func (s *side) sge(off, n int) verbs.SGE {
	return verbs.SGE{Addr: s.mr.Addr() + uint64(off), Length: uint32(n), LKey: s.mr.LKey()}
}

// va is the address remote accesses use for the buffer's byte off.
func (s *side) va(off int) uint64 { return s.mr.Addr() + uint64(off) }

// aligned8 is the first offset from off whose address is 8-byte aligned,
// as atomics need.
func (s *side) aligned8(off int) int {
	return off + int((8-s.va(off)%8)%8)
}

// postRecv posts one receive of n bytes at off.
func (s *side) postRecv(qp ibv.QP, id uint64, off, n int) {
	s.t.Helper()
	if err := qp.PostRecv(&verbs.RecvWR{ID: id, SGL: []verbs.SGE{s.sge(off, n)}}); err != nil {
		s.t.Fatalf("%s: PostRecv: %v", s.dev.Name(), err)
	}
}

// postSend posts one WR.
func (s *side) postSend(qp ibv.QP, wr *verbs.SendWR) {
	s.t.Helper()
	if err := qp.PostSend(wr); err != nil {
		s.t.Fatalf("%s: PostSend(%v): %v", s.dev.Name(), wr.Opcode, err)
	}
}

// pathMTU is the largest MTU both ports allow.
func pathMTU(a, b *side) verbs.MTU {
	return min(a.port.ActiveMTU, b.port.ActiveMTU)
}

// rdAtomic is how many READs and atomics a may have outstanding toward b
// (a's initiator depth, b's responder resources), at most 16.
func rdAtomic(a, b *side) uint8 {
	return uint8(max(0, min(16, a.attr.MaxQPInitRdAtom, b.attr.MaxQPRdAtom)))
}

// psn is a random 24-bit starting PSN, as ibv_rc_pingpong picks.
func psn() uint32 { return rand.Uint32() & 0xFFFFFF }

// toInit moves a RESET QP of s to INIT, allowing every remote access the
// device has.
func (s *side) toInit(t *testing.T, qp ibv.QP) {
	t.Helper()
	attr := verbs.QPAttr{State: verbs.QPSInit, PKeyIndex: 0, PortNum: 1}
	mask := verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort
	if qp.Type() == verbs.QPTypeUD {
		attr.QKey, mask = qkey, mask|verbs.AttrQKey
	} else {
		attr.AccessFlags = memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead
		if s.attr.AtomicCap != verbs.AtomicNone {
			attr.AccessFlags |= memory.RemoteAtomic
		}
		mask |= verbs.AttrAccessFlags
	}
	if err := qp.Modify(&attr, mask); err != nil {
		t.Fatalf("QP %#x to INIT: %v", qp.QPN(), err)
	}
}

// av is the address vector from s toward peer.
func (s *side) av(peer *side) verbs.AddressVector {
	return verbs.AddressVector{DGID: verbs.GIDFromAddr(peer.addr), SGIDIndex: uint8(s.gid), HopLimit: 64, PortNum: 1}
}

// rcPath is what one RC QP is told of its peer.
type rcPath struct {
	mtu          verbs.MTU
	destQPN      uint32
	rqPSN, sqPSN uint32
	ird, ord     uint8 // MaxDestRdAtomic, MaxRdAtomic
	av           verbs.AddressVector
}

func rtrAttr(p rcPath) (*verbs.QPAttr, verbs.QPAttrMask) {
	return &verbs.QPAttr{State: verbs.QPSRTR, AV: p.av, PathMTU: p.mtu, DestQPN: p.destQPN, RQPSN: p.rqPSN,
			MaxDestRdAtomic: p.ird, MinRNRTimer: rnrTimer},
		verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN |
			verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer
}

func rtsAttr(p rcPath) (*verbs.QPAttr, verbs.QPAttrMask) {
	return &verbs.QPAttr{State: verbs.QPSRTS, SQPSN: p.sqPSN, Timeout: timeout, RetryCnt: retries,
			RNRRetry: retries, MaxRdAtomic: p.ord},
		verbs.AttrState | verbs.AttrSQPSN | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry |
			verbs.AttrMaxQPRdAtomic
}

// rc is a connected pair of RC QPs and the paths they were given.
type rc struct {
	a, b   *side
	qa, qb ibv.QP
	pa, pb rcPath // what qa and qb were told
}

// plan returns the paths qa (on a) and qb (on b) get to reach each other,
// with random starting PSNs.
func plan(a *side, qa ibv.QP, b *side, qb ibv.QP) *rc {
	mtu := pathMTU(a, b)
	psnA, psnB := psn(), psn()
	return &rc{a: a, b: b, qa: qa, qb: qb,
		pa: rcPath{mtu: mtu, destQPN: qb.QPN(), rqPSN: psnB, sqPSN: psnA, ird: rdAtomic(b, a), ord: rdAtomic(a, b), av: a.av(b)},
		pb: rcPath{mtu: mtu, destQPN: qa.QPN(), rqPSN: psnA, sqPSN: psnB, ird: rdAtomic(a, b), ord: rdAtomic(b, a), av: b.av(a)},
	}
}

// connectRC takes qa (on a) and qb (on b), both in RESET, to RTS aimed at
// each other.
func connectRC(t *testing.T, a *side, qa ibv.QP, b *side, qb ibv.QP) *rc {
	t.Helper()
	c := plan(a, qa, b, qb)
	for _, q := range []struct {
		s  *side
		qp ibv.QP
		p  rcPath
	}{{a, qa, c.pa}, {b, qb, c.pb}} {
		q.s.toInit(t, q.qp)
		if err := q.qp.Modify(rtrAttr(q.p)); err != nil {
			t.Fatalf("QP %#x to RTR: %v", q.qp.QPN(), err)
		}
		if err := q.qp.Modify(rtsAttr(q.p)); err != nil {
			t.Fatalf("QP %#x to RTS: %v", q.qp.QPN(), err)
		}
	}
	return c
}

// newRC creates and connects an RC QP on each side with the capabilities
// asked (see side.qp).
func newRC(t *testing.T, p Pair, cp verbs.QPCap) *rc {
	t.Helper()
	a, b := newSides(t, p)
	return connectRC(t, a, a.qp(verbs.QPTypeRC, cp, nil), b, b.qp(verbs.QPTypeRC, cp, nil))
}

// toRTSUD takes a RESET UD QP of s to RTS.
func (s *side) toRTSUD(t *testing.T, qp ibv.QP) {
	t.Helper()
	s.toInit(t, qp)
	if err := qp.Modify(&verbs.QPAttr{State: verbs.QPSRTR}, verbs.AttrState); err != nil {
		t.Fatalf("UD QP %#x to RTR: %v", qp.QPN(), err)
	}
	if err := qp.Modify(&verbs.QPAttr{State: verbs.QPSRTS, SQPSN: psn()}, verbs.AttrState|verbs.AttrSQPSN); err != nil {
		t.Fatalf("UD QP %#x to RTS: %v", qp.QPN(), err)
	}
}

// handoffID is the WR ID of the empty SENDs handoff exchanges; their
// receives name handoffLen bytes at handoffOff, the end of the send half
// of the buffer, which no test sends from.
const (
	handoffID  = 0xF00D
	handoffOff = dstOff - handoffLen
	handoffLen = 64
)

// handoff SENDs an empty message from one side to the other and waits
// until it has arrived. A program learns that its peer's memory is ready,
// or that the peer's RDMA into its memory is complete, only from a message
// like this one (RC delivers it after everything the sender posted before
// it), never from its own completions; the tests look at memory the way a
// program may, which also gives the race detector the order the wire
// gives.
func handoff(t *testing.T, from *side, fq ibv.QP, to *side, tq ibv.QP) {
	t.Helper()
	// The receive carries one SGE although nothing lands in it: libsiw
	// refuses a receive WR without one (EINVAL).
	if err := tq.PostRecv(&verbs.RecvWR{ID: handoffID, SGL: []verbs.SGE{to.sge(handoffOff, handoffLen)}}); err != nil {
		t.Fatalf("handoff: PostRecv: %v", err)
	}
	from.postSend(fq, &verbs.SendWR{ID: handoffID, Opcode: verbs.WRSend, Flags: verbs.SendSignaled})
	wc := waitOne(t, to.rcq)
	checkWC(t, "handoff receive", wc, handoffID, verbs.WCSuccess, verbs.WCRecv)
	if wc.ByteLen != 0 {
		t.Fatalf("handoff receive: byte_len %d, want 0", wc.ByteLen)
	}
	checkWC(t, "handoff send", waitOne(t, from.scq), handoffID, verbs.WCSuccess, verbs.WCSend)
}

// ready tells A that B's memory is prepared (B advertises it).
func (c *rc) ready(t *testing.T) {
	t.Helper()
	handoff(t, c.b, c.qb, c.a, c.qa)
}

// done tells B that A's RDMA operations are complete (rping's "go
// ahead"): B may look at its memory.
func (c *rc) done(t *testing.T) {
	t.Helper()
	handoff(t, c.a, c.qa, c.b, c.qb)
}
