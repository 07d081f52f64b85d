// Completions with an error status, which end a run: the error names the
// QP (by its index in the run), the operation's number on it and the
// status. An error completion defines no opcode (verbs), so none is named.

package perf

import (
	"fmt"

	"github.com/rnic/rnic/nic/verbs"
)

// CompletionError is a completion with an error status.
type CompletionError struct {
	QP     int // index of the QP in the run, -1 if unknown
	Seq    int // the operation's number on its QP (for receives: none)
	Status verbs.WCStatus
	WRID   uint64
}

func (e *CompletionError) Error() string {
	return fmt.Sprintf("perf: QP %d: completion with error %v (%d) for wr_id %#x", e.QP, e.Status, e.Status, e.WRID)
}

// completionErr builds the error of a failed completion.
func (s *side) completionErr(wc *verbs.WC) error {
	qi, ok := s.byQP[wc.QPN]
	if !ok {
		qi = -1
	}
	_, seq := splitWRID(wc.WRID)
	return &CompletionError{QP: qi, Seq: seq, Status: wc.Status, WRID: wc.WRID}
}

// drainSend polls the send CQ without waiting and fails on an error
// completion. Latency loops call it so that their signaled WRs retire.
func (s *side) drainSend(wcs []verbs.WC) (int, error) {
	n := s.scq.Poll(wcs)
	for i := range wcs[:n] {
		if wcs[i].Status != verbs.WCSuccess {
			return n, s.completionErr(&wcs[i])
		}
	}
	return n, nil
}
