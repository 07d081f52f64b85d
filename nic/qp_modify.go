// ibv_modify_qp: the QP state transitions of IBTA Vol 1 §10.3.1 with the
// attributes each requires and allows per QP type (the IBTA's QP state
// transition properties, as ibv_modify_qp(3) documents them and Linux
// encodes them in ib_modify_qp_is_ok), and the range check of every attribute. nic validates;
// the engine applies (verbs.Engine.Modify) and owns the state.

package nic

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// allAttrs is every attribute mask bit verbs defines.
const allAttrs = verbs.AttrDestQPN<<1 - 1

// qpAccess is what a QP's access flags may hold: the remote rights the
// responder grants, plus LocalWrite, which perftest and others set and
// which means nothing for a QP (kernel verbs accept it too).
const qpAccess = memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic |
	memory.FlushGlobal | memory.FlushPersistent

// maxPSN is the largest 24-bit PSN or QPN.
const maxPSN = 1<<24 - 1

var attrNames = [...]string{
	"STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS", "PKEY_INDEX", "PORT", "QKEY", "AV",
	"PATH_MTU", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "RQ_PSN", "MAX_QP_RD_ATOMIC", "ALT_PATH",
	"MIN_RNR_TIMER", "SQ_PSN", "MAX_DEST_RD_ATOMIC", "PATH_MIG_STATE", "CAP", "DEST_QPN",
}

// AttrName returns the libibverbs name of the attributes in m (without the
// IBV_QP_ prefix), joined by '|'.
func AttrName(m verbs.QPAttrMask) string {
	if m == 0 {
		return "none"
	}
	var b strings.Builder
	for m != 0 {
		i := bits.TrailingZeros32(uint32(m))
		m &^= 1 << i
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		if i < len(attrNames) {
			b.WriteString(attrNames[i])
		} else {
			fmt.Fprintf(&b, "%#x", uint32(1)<<i)
		}
	}
	return b.String()
}

// typeMask is an attribute set per QP type.
type typeMask struct{ rc, uc, ud verbs.QPAttrMask }

func (m typeMask) of(t verbs.QPType) verbs.QPAttrMask {
	switch t {
	case verbs.QPTypeRC:
		return m.rc
	case verbs.QPTypeUC:
		return m.uc
	}
	return m.ud
}

// QP type sets a transition is valid for.
const (
	forRC  = 1 << 0
	forUC  = 1 << 1
	forUD  = 1 << 2
	forAll = forRC | forUC | forUD
)

func typeBit(t verbs.QPType) uint8 {
	switch t {
	case verbs.QPTypeRC:
		return forRC
	case verbs.QPTypeUC:
		return forUC
	}
	return forUD
}

// transition is one cell of the table: for which QP types it is valid, and
// the attributes it requires and allows besides STATE.
type transition struct {
	valid    uint8
	req, opt typeMask
}

const numStates = int(verbs.QPSErr) + 1

// Shorter names for the table.
const (
	aCurState = verbs.AttrCurState
	aSQDNote  = verbs.AttrEnSQDAsyncNotify
	aAccess   = verbs.AttrAccessFlags
	aPKey     = verbs.AttrPKeyIndex
	aPort     = verbs.AttrPort
	aQKey     = verbs.AttrQKey
	aAV       = verbs.AttrAV
	aMTU      = verbs.AttrPathMTU
	aTimeout  = verbs.AttrTimeout
	aRetry    = verbs.AttrRetryCnt
	aRNRRetry = verbs.AttrRNRRetry
	aRQPSN    = verbs.AttrRQPSN
	aRdAtomic = verbs.AttrMaxQPRdAtomic
	aAltPath  = verbs.AttrAltPath
	aRNRTimer = verbs.AttrMinRNRTimer
	aSQPSN    = verbs.AttrSQPSN
	aDestRd   = verbs.AttrMaxDestRdAtomic
	aMigState = verbs.AttrPathMigState
	aDestQPN  = verbs.AttrDestQPN
)

// toReset and toErr are valid from every state with no attribute: IBTA
// §10.3.1 allows any state to go to Reset or Error.
var (
	toReset = transition{valid: forAll}
	toErr   = transition{valid: forAll}
)

// qpTransitions[from][to]; a zero cell is not a valid transition. SQE
// exists for UC and UD only: an RC send queue error takes the QP straight
// to ERR (IBTA §10.3.1), so SQE→RTS is not valid for RC.
var qpTransitions = [numStates][numStates]transition{
	verbs.QPSReset: {
		verbs.QPSReset: toReset,
		verbs.QPSInit: {valid: forAll, req: typeMask{
			rc: aPKey | aPort | aAccess,
			uc: aPKey | aPort | aAccess,
			ud: aPKey | aPort | aQKey,
		}},
		verbs.QPSErr: toErr,
	},
	verbs.QPSInit: {
		verbs.QPSReset: toReset,
		verbs.QPSErr:   toErr,
		verbs.QPSInit: {valid: forAll, opt: typeMask{
			rc: aPKey | aPort | aAccess,
			uc: aPKey | aPort | aAccess,
			ud: aPKey | aPort | aQKey,
		}},
		verbs.QPSRTR: {valid: forAll,
			req: typeMask{
				rc: aAV | aMTU | aDestQPN | aRQPSN | aDestRd | aRNRTimer,
				uc: aAV | aMTU | aDestQPN | aRQPSN,
			},
			opt: typeMask{
				rc: aAltPath | aAccess | aPKey,
				uc: aAltPath | aAccess | aPKey,
				ud: aPKey | aQKey,
			}},
	},
	verbs.QPSRTR: {
		verbs.QPSReset: toReset,
		verbs.QPSErr:   toErr,
		verbs.QPSRTS: {valid: forAll,
			req: typeMask{
				rc: aTimeout | aRetry | aRNRRetry | aSQPSN | aRdAtomic,
				uc: aSQPSN,
				ud: aSQPSN,
			},
			opt: typeMask{
				rc: aCurState | aAltPath | aAccess | aRNRTimer | aMigState,
				uc: aCurState | aAltPath | aAccess | aMigState,
				ud: aCurState | aQKey,
			}},
	},
	verbs.QPSRTS: {
		verbs.QPSReset: toReset,
		verbs.QPSErr:   toErr,
		verbs.QPSRTS: {valid: forAll, opt: typeMask{
			rc: aCurState | aAccess | aAltPath | aMigState | aRNRTimer,
			uc: aCurState | aAccess | aAltPath | aMigState,
			ud: aCurState | aQKey,
		}},
		verbs.QPSSQD: {valid: forAll, opt: typeMask{rc: aSQDNote, uc: aSQDNote, ud: aSQDNote}},
	},
	verbs.QPSSQD: {
		verbs.QPSReset: toReset,
		verbs.QPSErr:   toErr,
		verbs.QPSRTS: {valid: forAll, opt: typeMask{
			rc: aCurState | aAltPath | aAccess | aRNRTimer | aMigState,
			uc: aCurState | aAltPath | aAccess | aMigState,
			ud: aCurState | aQKey,
		}},
		verbs.QPSSQD: {valid: forAll, opt: typeMask{
			rc: aPort | aAV | aTimeout | aRetry | aRNRRetry | aRdAtomic | aDestRd | aAltPath | aAccess | aPKey | aRNRTimer | aMigState,
			uc: aAV | aAltPath | aAccess | aPKey | aMigState,
			ud: aPKey | aQKey,
		}},
	},
	verbs.QPSSQE: {
		verbs.QPSReset: toReset,
		verbs.QPSErr:   toErr,
		verbs.QPSRTS: {valid: forUC | forUD, opt: typeMask{
			uc: aCurState | aAccess,
			ud: aCurState | aQKey,
		}},
	},
	verbs.QPSErr: {
		verbs.QPSReset: toReset,
		verbs.QPSErr:   toErr,
	},
}

// lowestBit returns the lowest attribute bit of m.
func lowestBit(m verbs.QPAttrMask) verbs.QPAttrMask { return m & -m }

// Modify changes the QP's attributes and, with verbs.AttrState in mask, its
// state (ibv_modify_qp). Without AttrState the QP stays in its state, which
// must then allow that (INIT→INIT, RTS→RTS, SQD→SQD). The transition must
// be valid for the QP type and current state; mask must hold every
// attribute the transition requires and no attribute it does not allow,
// and every attribute must be in range. A rejected attribute gives an
// *AttrError naming it. Nothing changes when Modify fails.
//
// Moving to RESET discards all outstanding work requests without
// completions; moving to ERR completes them with WR_FLUSH_ERR (the engine
// does both).
func (q *QP) Modify(attr *verbs.QPAttr, mask verbs.QPAttrMask) error {
	if attr == nil {
		return errorf(verbs.ErrInvalid, "modify %v: nil attributes", q)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.destroyed.Load() {
		return errorf(verbs.ErrDestroyed, "modify %v", q)
	}
	if unknown := mask &^ allAttrs; unknown != 0 {
		return errorf(verbs.ErrInvalid, "modify %v: unknown attribute mask bits %#x", q, uint32(unknown))
	}
	cur := q.eng.State()
	next := cur
	if mask&verbs.AttrState != 0 {
		next = attr.State
	}
	fail := func(a verbs.QPAttrMask, err error, format string, args ...any) error {
		return &AttrError{QPN: q.qpn, Type: q.typ, From: cur, To: next, Attr: a, Reason: fmt.Sprintf(format, args...), Err: err}
	}
	if next > verbs.QPSErr {
		return fail(verbs.AttrState, verbs.ErrInvalid, "no QP state %d", uint8(next))
	}
	tr := qpTransitions[cur][next]
	if tr.valid&typeBit(q.typ) == 0 {
		return fail(verbs.AttrState, verbs.ErrInvalidState, "%v→%v is not a valid transition for %v QPs", cur, next, q.typ)
	}
	req, opt := tr.req.of(q.typ), tr.opt.of(q.typ)
	if extra := mask &^ (req | opt | verbs.AttrState); extra != 0 {
		return fail(lowestBit(extra), verbs.ErrInvalid, "not allowed in %v→%v for %v QPs", cur, next, q.typ)
	}
	if missing := req &^ mask; missing != 0 {
		return fail(lowestBit(missing), verbs.ErrInvalid, "required by %v→%v for %v QPs (missing: %s)", cur, next, q.typ, AttrName(missing))
	}
	if mask&verbs.AttrCurState != 0 && attr.CurState != cur {
		return fail(verbs.AttrCurState, verbs.ErrInvalidState, "the QP is in %v, not %v", cur, attr.CurState)
	}
	a := *attr
	for m := mask; m != 0; m &^= lowestBit(m) {
		bit := lowestBit(m)
		if reason, err := q.d.checkQPAttr(q.typ, bit, &a); err != nil {
			return fail(bit, err, "%s", reason)
		}
	}

	// Responder resources count against the device's max_res_rd_atom
	// until the QP is reset or destroyed.
	oldRd := q.destRdAtom
	if mask&verbs.AttrMaxDestRdAtomic != 0 {
		if err := q.setDestRdAtom(int(a.MaxDestRdAtomic)); err != nil {
			return fail(verbs.AttrMaxDestRdAtomic, verbs.ErrNoMemory, "%v", err)
		}
	}
	if err := q.eng.Modify(cur, &a, mask); err != nil {
		_ = q.setDestRdAtom(oldRd) // only gives back what was taken
		if now := q.eng.State(); now != cur {
			return fmt.Errorf("nic: modify %v %v→%v: the QP moved to %v: %w: %w", q, cur, next, now, verbs.ErrInvalidState, err)
		}
		return fmt.Errorf("nic: modify %v %v→%v: engine: %w", q, cur, next, err)
	}
	if mask&verbs.AttrState != 0 && next == verbs.QPSReset {
		_ = q.setDestRdAtom(0)
		if q.rq != nil {
			q.rq.mu.Lock()
			q.rq.clear()
			q.rq.mu.Unlock()
		}
	}
	if q.watch != nil {
		q.watch(q.eng.State())
	}
	return nil
}

// setDestRdAtom changes the responder resources the QP holds to n.
// Caller holds q.mu.
func (q *QP) setDestRdAtom(n int) error {
	d := q.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if total := d.resRdAtom - q.destRdAtom + n; total > d.limits.MaxResRdAtom {
		return fmt.Errorf("%d responder resources in use, %d more would exceed max_res_rd_atom %d",
			d.resRdAtom, n-q.destRdAtom, d.limits.MaxResRdAtom)
	}
	d.resRdAtom += n - q.destRdAtom
	q.destRdAtom = n
	return nil
}

// checkQPAttr range-checks the attribute bit of a, normalising it in place
// where verbs allows two spellings (an IPv4 DGID). It returns the sentinel
// reason and the sentinel, or a nil error.
func (d *Device) checkQPAttr(t verbs.QPType, bit verbs.QPAttrMask, a *verbs.QPAttr) (string, error) {
	switch bit {
	case verbs.AttrAccessFlags:
		if bad := a.AccessFlags &^ qpAccess; bad != 0 {
			return fmt.Sprintf("%v: only LocalWrite, RemoteWrite, RemoteRead, RemoteAtomic and the FLUSH types apply to a QP", a.AccessFlags), verbs.ErrInvalid
		}
		if bad := a.AccessFlags & (memory.FlushGlobal | memory.FlushPersistent) &^ d.capsEx().FlushAccess(); bad != 0 {
			return fmt.Sprintf("%v on a device without that FLUSH", bad), verbs.ErrNotSupported
		}
		if a.AccessFlags&memory.RemoteAtomic != 0 && d.limits.NoAtomics {
			return "RemoteAtomic on a device without atomics", verbs.ErrNotSupported
		}
	case verbs.AttrPKeyIndex:
		if a.PKeyIndex >= maxPKeys {
			return fmt.Sprintf("pkey_index %d, max_pkeys is %d", a.PKeyIndex, maxPKeys), verbs.ErrInvalid
		}
	case verbs.AttrPort:
		if a.PortNum != 1 {
			return fmt.Sprintf("port %d, the device has port 1 only", a.PortNum), verbs.ErrInvalid
		}
	case verbs.AttrQKey:
		// IBTA Q_Key rules: a Q_Key with the high-order bit set is a
		// controlled Q_Key, for privileged consumers only.
		if a.QKey&0x80000000 != 0 && !d.privQKey {
			return fmt.Sprintf("controlled Q_Key %#x needs Config.PrivilegedQKey", a.QKey), verbs.ErrPermission
		}
	case verbs.AttrAV:
		av, reason := d.checkAV(&a.AV, t == verbs.QPTypeUD)
		if reason != "" {
			return reason, verbs.ErrInvalid
		}
		a.AV = av
	case verbs.AttrPathMTU:
		if a.PathMTU < verbs.MTU256 || a.PathMTU > verbs.MTU4096 {
			return fmt.Sprintf("path_mtu %d, must be 1 (256) .. 5 (4096)", a.PathMTU), verbs.ErrInvalid
		}
		if a.PathMTU > d.mtu {
			return fmt.Sprintf("path_mtu %d bytes exceeds the port's active MTU %d", a.PathMTU.Bytes(), d.mtu.Bytes()), verbs.ErrInvalid
		}
	case verbs.AttrTimeout:
		if a.Timeout > 31 {
			return fmt.Sprintf("timeout %d, must be 0..31", a.Timeout), verbs.ErrInvalid
		}
	case verbs.AttrRetryCnt:
		if a.RetryCnt > 7 {
			return fmt.Sprintf("retry_cnt %d, must be 0..7", a.RetryCnt), verbs.ErrInvalid
		}
	case verbs.AttrRNRRetry:
		if a.RNRRetry > 7 {
			return fmt.Sprintf("rnr_retry %d, must be 0..7", a.RNRRetry), verbs.ErrInvalid
		}
	case verbs.AttrMinRNRTimer:
		if a.MinRNRTimer > 31 {
			return fmt.Sprintf("min_rnr_timer %d, must be 0..31", a.MinRNRTimer), verbs.ErrInvalid
		}
	case verbs.AttrRQPSN:
		if a.RQPSN > maxPSN {
			return fmt.Sprintf("rq_psn %#x exceeds 24 bits", a.RQPSN), verbs.ErrInvalid
		}
	case verbs.AttrSQPSN:
		if a.SQPSN > maxPSN {
			return fmt.Sprintf("sq_psn %#x exceeds 24 bits", a.SQPSN), verbs.ErrInvalid
		}
	case verbs.AttrDestQPN:
		if a.DestQPN > maxPSN {
			return fmt.Sprintf("dest_qp_num %#x exceeds 24 bits", a.DestQPN), verbs.ErrInvalid
		}
	case verbs.AttrMaxQPRdAtomic:
		if int(a.MaxRdAtomic) > d.limits.MaxQPInitRdAtom {
			return fmt.Sprintf("max_rd_atomic %d exceeds max_qp_init_rd_atom %d", a.MaxRdAtomic, d.limits.MaxQPInitRdAtom), verbs.ErrInvalid
		}
	case verbs.AttrMaxDestRdAtomic:
		if int(a.MaxDestRdAtomic) > d.limits.MaxQPRdAtom {
			return fmt.Sprintf("max_dest_rd_atomic %d exceeds max_qp_rd_atom %d", a.MaxDestRdAtomic, d.limits.MaxQPRdAtom), verbs.ErrInvalid
		}
	case verbs.AttrAltPath:
		// Linux allows alternate paths on InfiniBand links only and
		// refuses them on RoCE with EINVAL before rxe sees them.
		return "an alternate path: automatic path migration has none on an Ethernet link", verbs.ErrInvalid
	case verbs.AttrPathMigState:
		return d.checkMigState(a.PathMigState)
	}
	return "", nil
}

// checkMigState accepts a path migration state on a device that advertises
// AUTO_PATH_MIG (kept for Query, as rxe keeps it; with no alternate path
// nothing ever migrates).
func (d *Device) checkMigState(m verbs.MigState) (string, error) {
	if d.limits.DeviceCap&verbs.DeviceAutoPathMig == 0 {
		return "path_mig_state: the device does not advertise AUTO_PATH_MIG", verbs.ErrNotSupported
	}
	if m > verbs.MigArmed {
		return fmt.Sprintf("path_mig_state %d, must be 0 (MIGRATED), 1 (REARM) or 2 (ARMED)", m), verbs.ErrInvalid
	}
	return "", nil
}
