package scenario

import (
	"bytes"
	"io"
	"time"

	"github.com/rnic/rnic/cmd/internal/ladder"
	"github.com/rnic/rnic/transport"
)

// Ladder draws the run as a ladder diagram, as SVG or (html) as the
// interactive page: the capture's frames, the frames the script lost or
// changed marked so, and the engines' timer expiries and RNR waits.
func (r *Run) Ladder(w io.Writer, html bool) error {
	truth := ladder.Truth{Notes: r.Notes}
	for _, m := range r.Marks {
		if mark, ok := ladder.TraceMark(transport.PcapEpoch.Add(m.Time), m.Node, m.QPN, m.Msg); ok {
			truth.Marks = append(truth.Marks, mark)
		}
	}
	o := ladder.Options{Title: "rnic lab run " + r.scenario.Name + ": " + r.scenario.Title, Gap: time.Millisecond}
	evs, start, err := ladder.LoadReader(bytes.NewReader(r.Pcap), "lab", o)
	if err != nil {
		return err
	}
	evs = ladder.Annotate(evs, start, truth)
	if html {
		return ladder.WriteHTML(w, evs, o)
	}
	return ladder.WriteSVG(w, evs, o)
}
