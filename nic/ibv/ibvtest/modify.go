// ibv_modify_qp's rules: a transition without an attribute it requires,
// and a transition that does not exist, fail and leave the QP as it was.

package ibvtest

import (
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// refused checks that a Modify fails and leaves qp in its state.
func refused(t *testing.T, qp ibv.QP, what string, attr *verbs.QPAttr, mask verbs.QPAttrMask) {
	t.Helper()
	before := qp.State()
	if err := qp.Modify(attr, mask); err == nil {
		t.Fatalf("%s: Modify succeeded", what)
	}
	if got := qp.State(); got != before {
		t.Fatalf("%s: the refused Modify moved the QP from %v to %v", what, before, got)
	}
	if a, err := qp.Query(); err != nil || a.State != before {
		t.Fatalf("%s: Query after the refused Modify: %v, %v; want state %v", what, a.State, err, before)
	}
}

func testModifyMissingAttr(t *testing.T, p Pair) {
	a, b := newSides(t, p)
	qa, qb := a.qp(verbs.QPTypeRC, verbs.QPCap{}, nil), b.qp(verbs.QPTypeRC, verbs.QPCap{}, nil)
	refused(t, qa, "RESET to RTS", &verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1}, verbs.AttrState|verbs.AttrSQPSN)
	refused(t, qa, "RESET to INIT without PORT", &verbs.QPAttr{State: verbs.QPSInit},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrAccessFlags)

	// The paths connectRC would give, applied by hand.
	c := plan(a, qa, b, qb)
	a.toInit(t, qa)
	rtr, mask := rtrAttr(c.pa)
	refused(t, qa, "INIT to RTR without DEST_QPN", rtr, mask&^verbs.AttrDestQPN)
	refused(t, qa, "INIT to RTR without AV", rtr, mask&^verbs.AttrAV)
	refused(t, qa, "INIT to RTR without RQ_PSN", rtr, mask&^verbs.AttrRQPSN)
	if err := qa.Modify(rtr, mask); err != nil {
		t.Fatalf("INIT to RTR: %v", err)
	}
	rts, mask := rtsAttr(c.pa)
	refused(t, qa, "RTR to RTS without SQ_PSN", rts, mask&^verbs.AttrSQPSN)
	if err := qa.Modify(rts, mask); err != nil {
		t.Fatalf("RTR to RTS: %v", err)
	}
	b.toInit(t, qb)
	if err := qb.Modify(rtrAttr(c.pb)); err != nil {
		t.Fatal(err)
	}
	if err := qb.Modify(rtsAttr(c.pb)); err != nil {
		t.Fatal(err)
	}
	// The refusals left nothing behind: the pair works.
	sendOne(t, c, verbs.WRSend, 100, 1, 0)
}
