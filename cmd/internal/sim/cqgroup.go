package sim

import (
	"fmt"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
)

// cqGroup is a send CQ and a receive CQ shared by up to groupEnds QPs of
// one node, as an application with many QPs shares CQs: the run loop polls
// a handful of CQs, not two per QP, so a step costs the same whatever the
// QP count.
type cqGroup struct {
	scq, rcq *nic.CQ
	members  int
}

// cqPerEnd is how many entries of each CQ one member QP may need: its
// send (or receive) queue's Depth, with room to spare as before grouping.
func (w *world) cqPerEnd() int { return 4 * w.cfg.Depth }

// groupEnds is how many QPs share a group: as many as the device's
// max_cqe allows (at least one).
func (w *world) groupEnds(nd *node) int {
	return max(1, nd.dev.Query().MaxCQE/w.cqPerEnd())
}

// joinGroup gives e the CQs of nd's newest group, opening a new group when
// that one is full.
func (w *world) joinGroup(nd *node, e *end) error {
	per := w.groupEnds(nd)
	if n := len(nd.groups); n == 0 || nd.groups[n-1].members == per {
		// Size the group for the QPs still to come, so a small run keeps
		// small CQs.
		room := min(per, w.cfg.QPs-nd.ends) * w.cqPerEnd()
		room = max(room, w.cqPerEnd())
		g := &cqGroup{}
		var err error
		if g.scq, err = nd.dev.CreateCQ(room); err != nil {
			return err
		}
		if g.rcq, err = nd.dev.CreateCQ(room); err != nil {
			return err
		}
		nd.groups = append(nd.groups, g)
	}
	g := nd.groups[len(nd.groups)-1]
	g.members++
	nd.ends++
	e.scq, e.rcq = g.scq, g.rcq
	return nil
}

// pollAll takes every completion waiting on every group's CQs, node by
// node, and hands each to the end of the QP it names. It reports whether
// there was any.
func (w *world) pollAll(wcs []verbs.WC) bool {
	progressed := false
	for _, nd := range []*node{w.a, w.b} {
		for _, g := range nd.groups {
			for n := g.scq.Poll(wcs); n > 0; n = g.scq.Poll(wcs) {
				for _, wc := range wcs[:n] {
					if e := w.endOf(nd, &wc); e != nil {
						w.sendCompletion(e, &wc)
					}
				}
				progressed = true
			}
			for n := g.rcq.Poll(wcs); n > 0; n = g.rcq.Poll(wcs) {
				for _, wc := range wcs[:n] {
					if e := w.endOf(nd, &wc); e != nil {
						w.recvCompletion(e, &wc)
					}
				}
				progressed = true
			}
		}
	}
	return progressed
}

// endOf is the end whose QP a completion names (nil, and a failure, for
// a QP the node does not have).
func (w *world) endOf(nd *node, wc *verbs.WC) *end {
	e := nd.byQPN[wc.QPN]
	if e == nil {
		w.res.Failed++
		w.res.Failures = append(w.res.Failures, fmt.Sprintf("%s: completion of unknown QP %#x: %+v", nd.name, wc.QPN, *wc))
	}
	return e
}

// completionReady reports whether any group's CQ holds a completion.
func (w *world) completionReady() bool {
	for _, nd := range []*node{w.a, w.b} {
		for _, g := range nd.groups {
			if g.scq.Len() > 0 || g.rcq.Len() > 0 {
				return true
			}
		}
	}
	return false
}
