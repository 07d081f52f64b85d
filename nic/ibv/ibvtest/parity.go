// The device capabilities a program switching from Linux rxe relies on,
// each checked where the device advertises it: the port's Q_Key violation
// counter (BAD_QKEY_CNTR), the path migration state (AUTO_PATH_MIG), the
// port given again (CHANGE_PHY_PORT), P_Key indices below max_pkeys, and a
// full work queue refusing one more WR with ENOMEM.

package ibvtest

import (
	"errors"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// testQKeyViolCounter: a UD SEND under a wrong Q_Key is dropped and the
// receiving port's qkey_viol_cntr counts it.
func testQKeyViolCounter(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	if b.attr.DeviceCapFlags&verbs.DeviceBadQKeyCntr == 0 {
		t.Skipf("%s does not advertise BAD_QKEY_CNTR", b.dev.Name())
	}
	qa, qb := a.qp(verbs.QPTypeUD, verbs.QPCap{}, nil), b.qp(verbs.QPTypeUD, verbs.QPCap{}, nil)
	a.toRTSUD(t, qa)
	b.toRTSUD(t, qb)
	ah, err := a.dev.CreateAH(a.pd, a.av(b))
	if err != nil {
		t.Fatalf("CreateAH: %v", err)
	}
	cleanup(t, "destroy AH", ah.Destroy)
	before := queryPort(t, b.dev)
	for id := range uint64(2) {
		b.postRecv(qb, id, dstOff+int(id)*1024, grhLen+64)
	}
	send := func(id uint64, qk uint32) {
		t.Helper()
		a.postSend(qa, &verbs.SendWR{ID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{a.sge(srcOff, 16)}, AH: ah.AV(), RemoteQPN: qb.QPN(), RemoteQKey: qk})
		checkWC(t, "UD send", waitOne(t, a.scq), id, verbs.WCSuccess, verbs.WCSend)
	}
	send(10, qkey^0x00FF0000)
	send(11, qkey)
	// The good SEND took the first receive: the bad one was dropped, and
	// had been counted by the time the good one arrived after it.
	checkWC(t, "UD receive", waitOne(t, b.rcq), 0, verbs.WCSuccess, verbs.WCRecv)
	after := queryPort(t, b.dev)
	if after.QKeyViolCntr != before.QKeyViolCntr+1 || after.BadPKeyCntr != before.BadPKeyCntr {
		t.Fatalf("qkey_viol_cntr %d → %d, bad_pkey_cntr %d → %d; want one Q_Key violation and no bad P_Key",
			before.QKeyViolCntr, after.QKeyViolCntr, before.BadPKeyCntr, after.BadPKeyCntr)
	}
}

func queryPort(t *testing.T, d ibv.Device) verbs.PortAttr {
	t.Helper()
	a, err := d.QueryPort(1)
	if err != nil {
		t.Fatalf("%s: QueryPort: %v", d.Name(), err)
	}
	return a
}

// testPathMigState: RTR→RTS and RTS→RTS take path_mig_state and Query
// gives it back; an alternate path is refused on an Ethernet link (Linux
// allows them on InfiniBand only); the pair still works afterwards.
func testPathMigState(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	qa, qb := a.qp(verbs.QPTypeRC, verbs.QPCap{}, nil), b.qp(verbs.QPTypeRC, verbs.QPCap{}, nil)
	c := plan(a, qa, b, qb)
	a.toInit(t, qa)
	if err := qa.Modify(rtrAttr(c.pa)); err != nil {
		t.Fatalf("INIT to RTR: %v", err)
	}
	rts, mask := rtsAttr(c.pa)
	rts.PathMigState = verbs.MigRearm
	if a.attr.DeviceCapFlags&verbs.DeviceAutoPathMig == 0 {
		refused(t, qa, "path_mig_state without AUTO_PATH_MIG", rts, mask|verbs.AttrPathMigState)
		t.Skipf("%s does not advertise AUTO_PATH_MIG", a.dev.Name())
	}
	if err := qa.Modify(rts, mask|verbs.AttrPathMigState); err != nil {
		t.Fatalf("RTR to RTS with path_mig_state REARM: %v", err)
	}
	wantMig(t, qa, verbs.MigRearm)
	for _, m := range []verbs.MigState{verbs.MigArmed, verbs.MigMigrated} {
		if err := qa.Modify(&verbs.QPAttr{State: verbs.QPSRTS, PathMigState: m}, verbs.AttrState|verbs.AttrPathMigState); err != nil {
			t.Fatalf("RTS to RTS with path_mig_state %d: %v", m, err)
		}
		wantMig(t, qa, m)
	}
	alt := verbs.QPAttr{State: verbs.QPSRTS, AV: a.av(b)}
	refused(t, qa, "an alternate path on Ethernet", &alt, verbs.AttrState|verbs.AttrAltPath)
	b.toInit(t, qb)
	if err := qb.Modify(rtrAttr(c.pb)); err != nil {
		t.Fatal(err)
	}
	if err := qb.Modify(rtsAttr(c.pb)); err != nil {
		t.Fatal(err)
	}
	sendOne(t, c, verbs.WRSend, 100, 1, 0)
}

func wantMig(t *testing.T, qp ibv.QP, want verbs.MigState) {
	t.Helper()
	got, err := qp.Query()
	if err != nil || got.PathMigState != want {
		t.Fatalf("Query: path_mig_state %d, %v; want %d", got.PathMigState, err, want)
	}
}

// testChangePort: with CHANGE_PHY_PORT, INIT→INIT takes port_num again;
// the device has port 1 only, so port 2 is refused and port 1 kept.
func testChangePort(t *testing.T, p Pair) {
	a, _ := newSides(t, p)
	if a.attr.DeviceCapFlags&verbs.DeviceChangePhyPort == 0 {
		t.Skipf("%s does not advertise CHANGE_PHY_PORT", a.dev.Name())
	}
	qp := a.qp(verbs.QPTypeRC, verbs.QPCap{}, nil)
	a.toInit(t, qp)
	if err := qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1}, verbs.AttrState|verbs.AttrPort); err != nil {
		t.Fatalf("INIT to INIT with port 1: %v", err)
	}
	refused(t, qp, "INIT to INIT with port 2", &verbs.QPAttr{State: verbs.QPSInit, PortNum: 2}, verbs.AttrState|verbs.AttrPort)
	if got, err := qp.Query(); err != nil || got.PortNum != 1 {
		t.Fatalf("Query: port %d, %v; want 1", got.PortNum, err)
	}
}

// testPKeyIndex: a QP may name any P_Key index below max_pkeys (rxe's 64)
// and Query gives it back; both sides send the default P_Key whatever the
// index, so a pair so made still talks.
func testPKeyIndex(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	if a.attr.MaxPKeys < 2 || b.attr.MaxPKeys < 2 {
		t.Skipf("max_pkeys %d and %d", a.attr.MaxPKeys, b.attr.MaxPKeys)
	}
	qa, qb := a.qp(verbs.QPTypeRC, verbs.QPCap{}, nil), b.qp(verbs.QPTypeRC, verbs.QPCap{}, nil)
	c := plan(a, qa, b, qb)
	for _, q := range []struct {
		s  *side
		qp ibv.QP
		p  rcPath
	}{{a, qa, c.pa}, {b, qb, c.pb}} {
		q.s.toInit(t, q.qp)
		idx := uint16(q.s.attr.MaxPKeys - 1)
		if err := q.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PKeyIndex: idx}, verbs.AttrState|verbs.AttrPKeyIndex); err != nil {
			t.Fatalf("INIT to INIT with pkey_index %d: %v", idx, err)
		}
		if got, err := q.qp.Query(); err != nil || got.PKeyIndex != idx {
			t.Fatalf("Query: pkey_index %d, %v; want %d", got.PKeyIndex, err, idx)
		}
		if err := q.qp.Modify(rtrAttr(q.p)); err != nil {
			t.Fatalf("QP %#x to RTR: %v", q.qp.QPN(), err)
		}
		if err := q.qp.Modify(rtsAttr(q.p)); err != nil {
			t.Fatalf("QP %#x to RTS: %v", q.qp.QPN(), err)
		}
	}
	sendOne(t, c, verbs.WRSend, 64, 2, 0)
}

// testFullQueues: a send queue, a receive queue and an SRQ each take as
// many WRs as they hold and refuse the next with ENOMEM (ErrQueueFull),
// as rxe does; the WRs before it stay posted. The peer of the send queue
// stays in INIT, so nothing it sends is answered while the test posts.
func testFullQueues(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	const depth = 8
	cp := verbs.QPCap{MaxSendWR: depth, MaxRecvWR: depth}
	qa, qb := a.qp(verbs.QPTypeRC, cp, nil), b.qp(verbs.QPTypeRC, cp, nil)
	c := plan(a, qa, b, qb)
	a.toInit(t, qa)
	if err := qa.Modify(rtrAttr(c.pa)); err != nil {
		t.Fatalf("INIT to RTR: %v", err)
	}
	if err := qa.Modify(rtsAttr(c.pa)); err != nil {
		t.Fatalf("RTR to RTS: %v", err)
	}
	b.toInit(t, qb)

	// rxe rounds its rings up (to a power of two, less one) and reports
	// the depth asked for: it refuses a WR once its own ring is full,
	// which may be later than the reported depth.
	more := func(s *side, size int) int {
		if isRxe(s) {
			return 2*size + 2
		}
		return size + 1
	}
	sends := make([]*verbs.SendWR, more(a, int(qa.Cap().MaxSendWR)))
	for i := range sends {
		sends[i] = &verbs.SendWR{ID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{a.sge(srcOff, 8)}}
	}
	wantFull(t, "send queue", int(qa.Cap().MaxSendWR), isRxe(a), qa.PostSend(sends...))

	recvs := make([]*verbs.RecvWR, more(b, int(qb.Cap().MaxRecvWR)))
	for i := range recvs {
		recvs[i] = &verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{b.sge(dstOff, 64)}}
	}
	wantFull(t, "receive queue", int(qb.Cap().MaxRecvWR), isRxe(b), qb.PostRecv(recvs...))

	if b.attr.MaxSRQ == 0 || b.attr.MaxSRQWR < depth {
		return
	}
	srq, err := b.dev.CreateSRQ(b.pd, depth, 1)
	if err != nil {
		t.Fatalf("CreateSRQ: %v", err)
	}
	cleanup(t, "destroy SRQ", srq.Destroy)
	n := depth
	if m, ok := srq.(ibv.SRQModifier); ok {
		n = m.QuerySRQ().MaxWR
	}
	recvs = make([]*verbs.RecvWR, more(b, n))
	for i := range recvs {
		recvs[i] = &verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{b.sge(dstOff, 64)}}
	}
	wantFull(t, "SRQ", n, isRxe(b), srq.PostRecv(recvs...))
}

// wantFull checks that a post of more WRs than the queue holds failed at
// the first WR past its size with ErrQueueFull; with orLater (rxe), at
// that WR or a later one.
func wantFull(t *testing.T, what string, size int, orLater bool, err error) {
	t.Helper()
	var pe *verbs.PostError
	if !errors.Is(err, verbs.ErrQueueFull) || !errors.As(err, &pe) || pe.Index < size || (!orLater && pe.Index != size) {
		t.Fatalf("%s of size %d: %v; want ErrQueueFull (ENOMEM) at WR %d", what, size, err, size)
	}
	t.Logf("%s: %d WRs posted, the next refused: %v", what, pe.Index, err)
}
