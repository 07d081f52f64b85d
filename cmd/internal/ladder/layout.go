package ladder

import "time"

// rowKind is what one row of the diagram shows.
type rowKind uint8

const (
	rowArrow rowKind = iota // one frame
	rowBand                 // a run of Middle packets of one message
	rowGap                  // a pause longer than the gap threshold
)

type row struct {
	kind   rowKind
	events []*Event      // rowArrow: one; rowBand: the run
	gap    time.Duration // rowGap: the pause
}

// minBand is the shortest run of Middle packets collapsed into a band.
const minBand = 3

// layout turns events (in frame order) into rows: a gap row before an event
// that follows a pause longer than gap, a band for every run of at least
// minBand consecutive Middle packets of one message, an arrow otherwise.
func layout(evs []Event, gap time.Duration) []row {
	var rows []row
	for i := 0; i < len(evs); {
		if i > 0 {
			if d := evs[i].Time - evs[i-1].Time; d > gap {
				rows = append(rows, row{kind: rowGap, gap: d})
			}
		}
		j := i + 1
		if k := evs[i].run; k != "" {
			for j < len(evs) && evs[j].run == k && evs[j].Time-evs[j-1].Time <= gap {
				j++
			}
		}
		if j-i >= minBand {
			r := row{kind: rowBand}
			for k := i; k < j; k++ {
				r.events = append(r.events, &evs[k])
			}
			rows = append(rows, r)
			i = j
			continue
		}
		rows = append(rows, row{kind: rowArrow, events: []*Event{&evs[i]}})
		i++
	}
	return rows
}
