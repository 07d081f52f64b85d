package ladder

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rnic/rnic/transport"
)

// Truth is what a simulated run knows and its capture cannot show: what
// the link did to each captured frame, and the engines' timer expiries and
// RNR waits.
type Truth struct {
	// Notes are the link's notes by capture record number (1-based).
	Notes map[int]transport.LinkNote
	// Marks are engine events, at their absolute time (the capture's
	// clock).
	Marks []Mark
}

// Mark is one engine event.
type Mark struct {
	At   time.Time
	Who  string // the device and QP, e.g. "rnic0 qp=0x1a2b3c"
	QP   int    // the QP number (for --qp)
	What string
}

// IsTimerOrRNR reports whether an engine trace message is one a ladder
// marks: a local ACK timeout, an exhausted retry count, an RNR NAK sent or
// waited on.
func IsTimerOrRNR(msg string) bool {
	for _, s := range []string{"local ACK timeout", "retry_cnt exhausted", "RNR NAK", "rnr_retry"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// TraceMark is the mark of an engine trace message that node's QP qpn
// reported at at, and whether the ladder marks such a message at all
// (IsTimerOrRNR).
func TraceMark(at time.Time, node string, qpn uint32, msg string) (Mark, bool) {
	if !IsTimerOrRNR(msg) {
		return Mark{}, false
	}
	return Mark{At: at, Who: fmt.Sprintf("%s qp=%#06x", node, qpn), QP: int(qpn), What: msg}, true
}

// Annotate applies t to the events of the capture whose first frame was at
// start: link notes mark frames lost, duplicated, corrupted or delayed, and
// marks are inserted in time order (after the frames of the same instant).
func Annotate(evs []Event, start time.Time, t Truth) []Event {
	for i := range evs {
		n, ok := t.Notes[evs[i].Frame]
		if !ok {
			continue
		}
		e := &evs[i]
		e.Lost = n&transport.NoteLost != 0
		if n&transport.NoteDuplicate != 0 {
			// The link's copy, not the sender's retransmission.
			e.Dup, e.Retx = true, false
		}
		var words []string
		for _, w := range strings.Split(n.String(), ",") {
			if w == "duplicate" {
				w = "duplicated"
			}
			words = append(words, w)
		}
		e.Note = strings.TrimSpace(e.Note + " [link: " + strings.Join(words, ",") + "]")
	}
	if len(t.Marks) == 0 {
		return evs
	}
	marks := make([]Event, 0, len(t.Marks))
	for _, m := range t.Marks {
		marks = append(marks, Event{Mark: true, Time: m.At.Sub(start), Label: m.Who + ": " + m.What,
			Decode: m.Who + ": " + m.What, SrcQP: -1, DstQP: m.QP, psn: -1, Class: ClassRNR})
	}
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].Time < marks[j].Time })
	// Merge, keeping the frames in capture order: a mark goes before the
	// first frame later than it.
	out := make([]Event, 0, len(evs)+len(marks))
	for _, e := range evs {
		for len(marks) > 0 && marks[0].Time < e.Time {
			out, marks = append(out, marks[0]), marks[1:]
		}
		out = append(out, e)
	}
	return append(out, marks...)
}
