package nic

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

var qpTypes = []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD}

var allStates = []verbs.QPState{verbs.QPSReset, verbs.QPSInit, verbs.QPSRTR, verbs.QPSRTS, verbs.QPSSQD, verbs.QPSSQE, verbs.QPSErr}

// spec is the transition table written out independently of the
// implementation's, from IBTA Vol 1 §10.3.1 / ibv_modify_qp(3): required and
// optional attributes per type, for each valid (from, to).
type specCell struct {
	types    []verbs.QPType
	req, opt map[verbs.QPType]verbs.QPAttrMask
}

func specTable() map[[2]verbs.QPState]specCell {
	const (
		RC, UC, UD = verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD
	)
	all := []verbs.QPType{RC, UC, UD}
	none := specCell{types: all}
	t := map[[2]verbs.QPState]specCell{}
	for _, s := range allStates {
		t[[2]verbs.QPState{s, verbs.QPSReset}] = none
		t[[2]verbs.QPState{s, verbs.QPSErr}] = none
	}
	init := map[verbs.QPType]verbs.QPAttrMask{
		RC: verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags,
		UC: verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags,
		UD: verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrQKey,
	}
	t[[2]verbs.QPState{verbs.QPSReset, verbs.QPSInit}] = specCell{types: all, req: init}
	t[[2]verbs.QPState{verbs.QPSInit, verbs.QPSInit}] = specCell{types: all, opt: init}
	t[[2]verbs.QPState{verbs.QPSInit, verbs.QPSRTR}] = specCell{types: all,
		req: map[verbs.QPType]verbs.QPAttrMask{
			RC: verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer,
			UC: verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN,
		},
		opt: map[verbs.QPType]verbs.QPAttrMask{
			RC: verbs.AttrAltPath | verbs.AttrAccessFlags | verbs.AttrPKeyIndex,
			UC: verbs.AttrAltPath | verbs.AttrAccessFlags | verbs.AttrPKeyIndex,
			UD: verbs.AttrPKeyIndex | verbs.AttrQKey,
		}}
	toRTS := map[verbs.QPType]verbs.QPAttrMask{
		RC: verbs.AttrCurState | verbs.AttrAltPath | verbs.AttrAccessFlags | verbs.AttrMinRNRTimer | verbs.AttrPathMigState,
		UC: verbs.AttrCurState | verbs.AttrAltPath | verbs.AttrAccessFlags | verbs.AttrPathMigState,
		UD: verbs.AttrCurState | verbs.AttrQKey,
	}
	t[[2]verbs.QPState{verbs.QPSRTR, verbs.QPSRTS}] = specCell{types: all,
		req: map[verbs.QPType]verbs.QPAttrMask{
			RC: verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrSQPSN | verbs.AttrMaxQPRdAtomic,
			UC: verbs.AttrSQPSN,
			UD: verbs.AttrSQPSN,
		},
		opt: toRTS}
	t[[2]verbs.QPState{verbs.QPSRTS, verbs.QPSRTS}] = specCell{types: all, opt: toRTS}
	t[[2]verbs.QPState{verbs.QPSSQD, verbs.QPSRTS}] = specCell{types: all, opt: toRTS}
	t[[2]verbs.QPState{verbs.QPSRTS, verbs.QPSSQD}] = specCell{types: all, opt: map[verbs.QPType]verbs.QPAttrMask{
		RC: verbs.AttrEnSQDAsyncNotify, UC: verbs.AttrEnSQDAsyncNotify, UD: verbs.AttrEnSQDAsyncNotify}}
	t[[2]verbs.QPState{verbs.QPSSQD, verbs.QPSSQD}] = specCell{types: all, opt: map[verbs.QPType]verbs.QPAttrMask{
		RC: verbs.AttrPort | verbs.AttrAV | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrMaxQPRdAtomic |
			verbs.AttrMaxDestRdAtomic | verbs.AttrAltPath | verbs.AttrAccessFlags | verbs.AttrPKeyIndex | verbs.AttrMinRNRTimer | verbs.AttrPathMigState,
		UC: verbs.AttrAV | verbs.AttrAltPath | verbs.AttrAccessFlags | verbs.AttrPKeyIndex | verbs.AttrPathMigState,
		UD: verbs.AttrPKeyIndex | verbs.AttrQKey,
	}}
	t[[2]verbs.QPState{verbs.QPSSQE, verbs.QPSRTS}] = specCell{types: []verbs.QPType{UC, UD}, opt: map[verbs.QPType]verbs.QPAttrMask{
		UC: verbs.AttrCurState | verbs.AttrAccessFlags,
		UD: verbs.AttrCurState | verbs.AttrQKey,
	}}
	return t
}

// refused are attributes the table allows but a RoCE device refuses with
// verbs.ErrInvalid, as Linux does: an alternate path (InfiniBand only).
const refused = verbs.AttrAltPath

func hasType(ts []verbs.QPType, t verbs.QPType) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func eachBit(m verbs.QPAttrMask, fn func(verbs.QPAttrMask)) {
	for b := verbs.QPAttrMask(1); b <= verbs.AttrDestQPN; b <<= 1 {
		if m&b != 0 {
			fn(b)
		}
	}
}

func attrFor(from, to verbs.QPState) *verbs.QPAttr {
	a := goodAttr()
	a.State, a.CurState = to, from
	return &a
}

// TestModifyTransitions walks every (type, from, to): valid transitions
// succeed with their required attributes, with each optional one added,
// and fail naming the attribute when a required one is missing or a
// disallowed one is present; invalid transitions fail with
// verbs.ErrInvalidState.
func TestModifyTransitions(t *testing.T) {
	spec := specTable()
	for _, typ := range qpTypes {
		for _, from := range allStates {
			for _, to := range allStates {
				cell, ok := spec[[2]verbs.QPState{from, to}]
				valid := ok && hasType(cell.types, typ)
				name := fmt.Sprintf("%v/%v→%v", typ, from, to)
				t.Run(name, func(t *testing.T) {
					f := newFixture(t)
					// Modify with no state change is requested without
					// AttrState, as applications do.
					try := func(mask verbs.QPAttrMask) (*fakeEngine, error) {
						q, e := f.qpIn(typ, from)
						return e, q.Modify(attrFor(from, to), mask)
					}
					stateBit := verbs.AttrState
					if from == to {
						stateBit = 0
					}
					if !valid {
						_, err := try(verbs.AttrState)
						wantIs(t, "invalid transition", err, verbs.ErrInvalidState)
						var ae *AttrError
						if !errors.As(err, &ae) || ae.Attr != verbs.AttrState {
							t.Fatalf("error %v does not name STATE", err)
						}
						return
					}
					req, opt := cell.req[typ], cell.opt[typ]
					e, err := try(stateBit | req)
					wantIs(t, "required attributes only", err, nil)
					if c := e.lastModify(); c.cur != from || c.mask != stateBit|req || (stateBit != 0 && e.State() != to) {
						t.Fatalf("engine saw %+v, state %v", c, e.State())
					}
					eachBit(req, func(b verbs.QPAttrMask) {
						e, err := try(stateBit | req&^b)
						checkAttrErr(t, "missing "+AttrName(b), err, b, verbs.ErrInvalid)
						if len(e.modifies) != 0 {
							t.Fatalf("engine called despite missing %s", AttrName(b))
						}
					})
					eachBit(opt, func(b verbs.QPAttrMask) {
						_, err := try(stateBit | req | b)
						if b&refused != 0 {
							checkAttrErr(t, "optional "+AttrName(b), err, b, verbs.ErrInvalid)
							return
						}
						wantIs(t, "optional "+AttrName(b), err, nil)
					})
					eachBit(allAttrs&^(req|opt|verbs.AttrState), func(b verbs.QPAttrMask) {
						_, err := try(stateBit | req | b)
						checkAttrErr(t, "disallowed "+AttrName(b), err, b, verbs.ErrInvalid)
					})
				})
			}
		}
	}
}

func checkAttrErr(t *testing.T, what string, err error, attr verbs.QPAttrMask, sentinel error) {
	t.Helper()
	var ae *AttrError
	if !errors.As(err, &ae) {
		t.Fatalf("%s: error %v is not an *AttrError", what, err)
	}
	if ae.Attr != attr {
		t.Fatalf("%s: error names %s, want %s (%v)", what, AttrName(ae.Attr), AttrName(attr), err)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %v does not wrap %v", what, err, sentinel)
	}
}

// TestModifyRanges checks every attribute's range, in a transition that
// allows it.
func TestModifyRanges(t *testing.T) {
	type rng struct {
		name  string
		typ   verbs.QPType
		from  verbs.QPState
		to    verbs.QPState
		mask  verbs.QPAttrMask
		attr  verbs.QPAttrMask // the attribute at fault; 0: must succeed
		err   error
		tweak func(*verbs.QPAttr)
	}
	const (
		RC, UC, UD = verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD
		toInit     = verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags
		toInitUD   = verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrQKey
		toRTR      = verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer
		toRTS      = verbs.AttrState | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrSQPSN | verbs.AttrMaxQPRdAtomic
	)
	R, I, RTR, RTS := verbs.QPSReset, verbs.QPSInit, verbs.QPSRTR, verbs.QPSRTS
	cases := []rng{
		{"pkey_index 64", RC, R, I, toInit, verbs.AttrPKeyIndex, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.PKeyIndex = 64 }},
		{"pkey_index 63", RC, R, I, toInit, 0, nil, func(a *verbs.QPAttr) { a.PKeyIndex = 63 }},
		{"path_mig_state 3", RC, RTR, RTS, toRTS | verbs.AttrPathMigState, verbs.AttrPathMigState, verbs.ErrInvalid,
			func(a *verbs.QPAttr) { a.PathMigState = 3 }},
		{"path_mig_state ARMED", RC, RTR, RTS, toRTS | verbs.AttrPathMigState, 0, nil, func(a *verbs.QPAttr) { a.PathMigState = verbs.MigArmed }},
		{"port 0", RC, R, I, toInit, verbs.AttrPort, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.PortNum = 0 }},
		{"port 2", UD, R, I, toInitUD, verbs.AttrPort, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.PortNum = 2 }},
		{"access MWBind", RC, R, I, toInit, verbs.AttrAccessFlags, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.AccessFlags = memory.MWBind }},
		{"access unknown bit", UC, R, I, toInit, verbs.AttrAccessFlags, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.AccessFlags = 1 << 6 }},
		{"access all remote + local", RC, R, I, toInit, 0, nil, func(a *verbs.QPAttr) {
			a.AccessFlags = memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
		}},
		{"controlled qkey", UD, R, I, toInitUD, verbs.AttrQKey, verbs.ErrPermission, func(a *verbs.QPAttr) { a.QKey = 0x80010000 }},
		{"qkey 0x7fffffff", UD, R, I, toInitUD, 0, nil, func(a *verbs.QPAttr) { a.QKey = 0x7fffffff }},
		{"path_mtu 0", RC, I, RTR, toRTR, verbs.AttrPathMTU, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.PathMTU = 0 }},
		{"path_mtu 6", RC, I, RTR, toRTR, verbs.AttrPathMTU, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.PathMTU = 6 }},
		{"path_mtu above active", UC, I, RTR, toRTR &^ (verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer), verbs.AttrPathMTU, verbs.ErrInvalid,
			func(a *verbs.QPAttr) { a.PathMTU = verbs.MTU2048 }},
		{"path_mtu 256", RC, I, RTR, toRTR, 0, nil, func(a *verbs.QPAttr) { a.PathMTU = verbs.MTU256 }},
		{"rq_psn 2^24", RC, I, RTR, toRTR, verbs.AttrRQPSN, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.RQPSN = 1 << 24 }},
		{"rq_psn max", RC, I, RTR, toRTR, 0, nil, func(a *verbs.QPAttr) { a.RQPSN = 1<<24 - 1 }},
		{"dest_qpn 2^24", RC, I, RTR, toRTR, verbs.AttrDestQPN, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.DestQPN = 1 << 24 }},
		{"min_rnr_timer 32", RC, I, RTR, toRTR, verbs.AttrMinRNRTimer, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.MinRNRTimer = 32 }},
		{"min_rnr_timer 31", RC, I, RTR, toRTR, 0, nil, func(a *verbs.QPAttr) { a.MinRNRTimer = 31 }},
		{"max_dest_rd_atomic 129", RC, I, RTR, toRTR, verbs.AttrMaxDestRdAtomic, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.MaxDestRdAtomic = 129 }},
		{"max_dest_rd_atomic 128", RC, I, RTR, toRTR, 0, nil, func(a *verbs.QPAttr) { a.MaxDestRdAtomic = 128 }},
		{"max_dest_rd_atomic 0", RC, I, RTR, toRTR, 0, nil, func(a *verbs.QPAttr) { a.MaxDestRdAtomic = 0 }},
		{"av dgid unset", RC, I, RTR, toRTR, verbs.AttrAV, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.AV.DGID = netip.Addr{} }},
		{"av dgid ::", RC, I, RTR, toRTR, verbs.AttrAV, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.AV.DGID = netip.IPv6Unspecified() }},
		{"av dgid 0.0.0.0", RC, I, RTR, toRTR, verbs.AttrAV, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.AV.DGID = netip.MustParseAddr("::ffff:0.0.0.0") }},
		{"av dgid multicast on RC", RC, I, RTR, toRTR, verbs.AttrAV, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.AV.DGID = netip.MustParseAddr("239.1.1.1") }},
		{"av sgid_index beyond table", RC, I, RTR, toRTR, verbs.AttrAV, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.AV.SGIDIndex = 2 }},
		{"av IPv6 SGID to IPv4 DGID", RC, I, RTR, toRTR, verbs.AttrAV, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.AV.SGIDIndex = 1 }},
		{"av IPv6", RC, I, RTR, toRTR, 0, nil, func(a *verbs.QPAttr) { a.AV.SGIDIndex, a.AV.DGID = 1, netip.MustParseAddr("fd00::2") }},
		{"av port 0", RC, I, RTR, toRTR, verbs.AttrAV, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.AV.PortNum = 0 }},
		{"av flow label ~0 (low 20 bits kept)", RC, I, RTR, toRTR, 0, nil, func(a *verbs.QPAttr) { a.AV.FlowLabel = ^uint32(0) }},
		{"av sl 16", RC, I, RTR, toRTR, verbs.AttrAV, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.AV.SL = 16 }},
		{"av full byte tc and hop limit", RC, I, RTR, toRTR, 0, nil, func(a *verbs.QPAttr) { a.AV.TrafficClass, a.AV.HopLimit = 255, 255 }},
		{"timeout 32", RC, RTR, RTS, toRTS, verbs.AttrTimeout, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.Timeout = 32 }},
		{"timeout 0", RC, RTR, RTS, toRTS, 0, nil, func(a *verbs.QPAttr) { a.Timeout = 0 }},
		{"retry_cnt 8", RC, RTR, RTS, toRTS, verbs.AttrRetryCnt, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.RetryCnt = 8 }},
		{"rnr_retry 8", RC, RTR, RTS, toRTS, verbs.AttrRNRRetry, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.RNRRetry = 8 }},
		{"sq_psn 2^24", UD, RTR, RTS, verbs.AttrState | verbs.AttrSQPSN, verbs.AttrSQPSN, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.SQPSN = 1 << 24 }},
		{"max_rd_atomic 129", RC, RTR, RTS, toRTS, verbs.AttrMaxQPRdAtomic, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.MaxRdAtomic = 129 }},
		{"max_rd_atomic 128", RC, RTR, RTS, toRTS, 0, nil, func(a *verbs.QPAttr) { a.MaxRdAtomic = 128 }},
		{"state 7", RC, RTS, RTS, verbs.AttrState, verbs.AttrState, verbs.ErrInvalid, func(a *verbs.QPAttr) { a.State = 7 }},
		{"cur_state mismatch", UD, verbs.QPSSQE, RTS, verbs.AttrState | verbs.AttrCurState, verbs.AttrCurState, verbs.ErrInvalidState,
			func(a *verbs.QPAttr) { a.CurState = RTS }},
		{"cur_state match", UD, verbs.QPSSQE, RTS, verbs.AttrState | verbs.AttrCurState, 0, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			q, e := f.qpIn(c.typ, c.from)
			a := attrFor(c.from, c.to)
			if c.tweak != nil {
				c.tweak(a)
			}
			err := q.Modify(a, c.mask)
			if c.attr == 0 {
				wantIs(t, "Modify", err, nil)
				if c.mask&verbs.AttrAV != 0 && e.lastModify().attr.AV.FlowLabel > 0xFFFFF {
					t.Fatalf("the engine got flow label %#x, wider than 20 bits", e.lastModify().attr.AV.FlowLabel)
				}
				return
			}
			checkAttrErr(t, "Modify", err, c.attr, c.err)
			if len(e.modifies) != 0 || e.State() != c.from {
				t.Fatal("a rejected modify reached the engine")
			}
		})
	}
}

func TestModifyMisc(t *testing.T) {
	f := newFixture(t)
	q, e := f.qp(verbs.QPTypeRC)
	wantIs(t, "nil attr", q.Modify(nil, verbs.AttrState), verbs.ErrInvalid)
	wantIs(t, "unknown mask bit", q.Modify(attrFor(0, 1), verbs.AttrState|1<<21), verbs.ErrInvalid)

	// RESET→RESET and a modify with no attribute at all are valid.
	wantIs(t, "RESET→RESET", q.Modify(attrFor(0, 0), verbs.AttrState), nil)
	wantIs(t, "empty modify in RESET", q.Modify(attrFor(0, 0), 0), nil)
	// RTR→RTR (no state change) is not.
	e.setState(verbs.QPSRTR)
	wantIs(t, "RTR without state change", q.Modify(attrFor(2, 2), verbs.AttrAccessFlags), verbs.ErrInvalidState)

	// The engine receives the DGID in GID form.
	e.setState(verbs.QPSInit)
	a := attrFor(verbs.QPSInit, verbs.QPSRTR)
	a.AV.DGID = netip.MustParseAddr("10.9.8.7")
	mask := verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer
	wantIs(t, "INIT→RTR with an IPv4 DGID", q.Modify(a, mask), nil)
	if got := e.lastModify().attr.AV.DGID; got != netip.MustParseAddr("::ffff:10.9.8.7") {
		t.Errorf("engine got DGID %v", got)
	}
	if a.AV.DGID != netip.MustParseAddr("10.9.8.7") {
		t.Error("Modify changed the caller's attributes")
	}

	// An engine error is wrapped; a state change under us is
	// verbs.ErrInvalidState.
	e.mu.Lock()
	e.modifyErr = errors.New("boom")
	e.mu.Unlock()
	err := q.Modify(attrFor(2, 6), verbs.AttrState)
	if err == nil || errors.Is(err, verbs.ErrInvalidState) {
		t.Errorf("engine failure: %v", err)
	}
	// The engine moves the QP to ERR between nic's check and its Modify:
	// the error says so.
	e.setState(verbs.QPSRTS)
	errState := verbs.QPSErr
	e.mu.Lock()
	e.raceTo = &errState
	e.mu.Unlock()
	err = q.Modify(attrFor(3, 4), verbs.AttrState)
	wantIs(t, "modify raced by the engine", err, verbs.ErrInvalidState)
	if e.State() != verbs.QPSErr {
		t.Error("state")
	}
}

func TestModifyToErrFlushesAndResetEmpties(t *testing.T) {
	f := newFixture(t)
	q, e := f.qpIn(verbs.QPTypeRC, verbs.QPSInit)
	for i := range 3 {
		wantIs(t, "PostRecv", q.PostRecv(&verbs.RecvWR{ID: uint64(i)}), nil)
	}
	wantIs(t, "→ERR", q.Modify(attrFor(1, 6), verbs.AttrState), nil)
	wcs := make([]verbs.WC, 8)
	n := f.cq.Poll(wcs)
	if n != 3 {
		t.Fatalf("%d flush completions", n)
	}
	for i, wc := range wcs[:n] {
		if wc.WRID != uint64(i) || wc.Status != verbs.WCWRFlushErr || wc.QPN != q.QPN() {
			t.Errorf("completion %d: %+v", i, wc)
		}
	}

	q2, e2 := f.qpIn(verbs.QPTypeUC, verbs.QPSRTS)
	for i := range 3 {
		wantIs(t, "PostRecv", q2.PostRecv(&verbs.RecvWR{ID: uint64(i)}), nil)
	}
	wantIs(t, "→RESET", q2.Modify(attrFor(3, 0), verbs.AttrState), nil)
	if q2.rq.Len() != 0 {
		t.Error("RESET left receive WRs queued")
	}
	if f.cq.Len() != 0 {
		t.Error("RESET generated completions")
	}
	_ = e
	_ = e2
}

func TestResRdAtomAccounting(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Limits = Limits{MaxResRdAtom: 10, MaxQPRdAtom: 8} })
	mask := verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer
	toRTR := func(q *QP, n uint8) error {
		a := attrFor(verbs.QPSInit, verbs.QPSRTR)
		a.MaxDestRdAtomic = n
		return q.Modify(a, mask)
	}
	q1, _ := f.qpIn(verbs.QPTypeRC, verbs.QPSInit)
	q2, _ := f.qpIn(verbs.QPTypeRC, verbs.QPSInit)
	wantIs(t, "q1 takes 8", toRTR(q1, 8), nil)
	err := toRTR(q2, 3)
	checkAttrErr(t, "q2 takes 3 of the 2 left", err, verbs.AttrMaxDestRdAtomic, verbs.ErrNoMemory)
	wantIs(t, "q2 takes 2", toRTR(q2, 2), nil)
	wantIs(t, "q1 reset", q1.Modify(attrFor(verbs.QPSRTR, verbs.QPSReset), verbs.AttrState), nil)
	wantIs(t, "q2 destroyed", q2.Destroy(), nil)
	q3, _ := f.qpIn(verbs.QPTypeRC, verbs.QPSInit)
	wantIs(t, "q3 takes 8 after release", toRTR(q3, 8), nil)
	if f.d.resRdAtom != 8 {
		t.Errorf("resRdAtom %d", f.d.resRdAtom)
	}
}

func TestQPKeyPrivileged(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.PrivilegedQKey = true })
	q, _ := f.qp(verbs.QPTypeUD)
	a := attrFor(verbs.QPSReset, verbs.QPSInit)
	a.QKey = 0x80010000
	wantIs(t, "controlled Q_Key with privilege", q.Modify(a, verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrQKey), nil)
}

func TestNoAtomicsAccess(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Limits.NoAtomics = true })
	q, _ := f.qp(verbs.QPTypeRC)
	a := attrFor(verbs.QPSReset, verbs.QPSInit)
	a.AccessFlags = memory.RemoteAtomic
	err := q.Modify(a, verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags)
	checkAttrErr(t, "RemoteAtomic without atomics", err, verbs.AttrAccessFlags, verbs.ErrNotSupported)
}

// TestFullBringUp walks RC, UC and UD QPs through the states as an
// application does and checks Query.
func TestFullBringUp(t *testing.T) {
	f := newFixture(t)
	for _, typ := range qpTypes {
		q, e := f.qp(typ)
		a := goodAttr()
		steps := []struct {
			to   verbs.QPState
			mask verbs.QPAttrMask
		}{
			{verbs.QPSInit, verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags},
			{verbs.QPSRTR, verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer},
			{verbs.QPSRTS, verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrSQPSN | verbs.AttrMaxQPRdAtomic},
			{verbs.QPSSQD, verbs.AttrEnSQDAsyncNotify},
			{verbs.QPSRTS, 0},
		}
		for _, s := range steps {
			mask := s.mask
			switch typ {
			case verbs.QPTypeUC:
				mask &^= verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrMaxQPRdAtomic
			case verbs.QPTypeUD:
				mask &= verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrSQPSN | verbs.AttrEnSQDAsyncNotify
				if s.to == verbs.QPSInit {
					mask |= verbs.AttrQKey
				}
			}
			a.State = s.to
			if err := q.Modify(&a, verbs.AttrState|mask); err != nil {
				t.Fatalf("%v →%v: %v", typ, s.to, err)
			}
		}
		got, err := q.Query()
		wantIs(t, "Query", err, nil)
		if got.State != verbs.QPSRTS || got.CurState != verbs.QPSRTS || got.Cap != defaultCap {
			t.Errorf("%v: Query %+v", typ, got)
		}
		if typ == verbs.QPTypeUD && got.PathMTU != verbs.MTU1024 {
			t.Errorf("UD path MTU %d, want the port's", got.PathMTU)
		}
		if typ != verbs.QPTypeUD && got.AV.DGID != verbs.GIDFromAddr(peerV4) {
			t.Errorf("%v: AV %+v", typ, got.AV)
		}
		_ = e
	}
}

// TestWatchState: the watcher sees the state after each Modify that
// succeeds, nothing for one that fails, and nothing after Destroy.
func TestWatchState(t *testing.T) {
	f := newFixture(t)
	q, _ := f.qp(verbs.QPTypeRC)
	var seen []verbs.QPState
	q.WatchState(func(st verbs.QPState) { seen = append(seen, st) })
	a := goodAttr()
	a.State = verbs.QPSInit
	if err := q.Modify(&a, verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	a.State = verbs.QPSRTS // not from INIT
	if err := q.Modify(&a, verbs.AttrState); err == nil {
		t.Fatal("INIT→RTS succeeded")
	}
	a.State = verbs.QPSErr
	if err := q.Modify(&a, verbs.AttrState); err != nil {
		t.Fatal(err)
	}
	if err := q.Destroy(); err != nil {
		t.Fatal(err)
	}
	q.Modify(&a, verbs.AttrState) // fails: destroyed
	if want := []verbs.QPState{verbs.QPSInit, verbs.QPSErr}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("watched %v, want %v", seen, want)
	}
}
