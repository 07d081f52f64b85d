package ladder

import (
	"errors"
	"fmt"
	"io"
	"time"

	iwdecode "github.com/rnic/rnic/iwarp/decode"
	"github.com/rnic/rnic/roce/decode"
)

// Options selects and shapes what is drawn.
type Options struct {
	// Ports are the UDP ports that carry RoCEv2; empty means 4791.
	Ports []uint16
	// ByQP gives every QP (RoCE) or TCP endpoint (iWARP) its own lane
	// instead of one lane per address.
	ByQP bool
	// From and To select a part: frames From..To (inclusive). Zero means
	// the first and last frame.
	From, To int
	// FromTime and ToTime select by time since the first frame; used
	// when non-zero (ToTime) or non-negative (FromTime).
	FromTime, ToTime time.Duration
	// QP keeps only RoCE frames to or from this QP number (0: all; QP 0
	// never carries RoCEv2 traffic).
	QP int
	// Gap is the pause after which a break is drawn; 0 means 10 ms.
	Gap time.Duration
	// Title is shown above the diagram (e.g. the capture's name).
	Title string
}

// Load decodes a capture file into events, one per frame, in frame order.
func Load(path string, o Options) ([]Event, error) {
	r, err := decode.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	evs, _, err := load(r, path, o)
	if err != nil {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return evs, err
}

// LoadReader decodes a capture read from r (name is what the JSON
// decodes call the file). It also returns the first frame's timestamp,
// the zero of the events' times.
func LoadReader(rd io.Reader, name string, o Options) ([]Event, time.Time, error) {
	r, err := decode.NewReader(rd)
	if err != nil {
		return nil, time.Time{}, err
	}
	return load(r, name, o)
}

func load(r *decode.Reader, path string, o Options) ([]Event, time.Time, error) {
	var evs []Event
	var first time.Time
	iw := iwdecode.New()
	c := newClassifier()
	emit := func(rec *iwdecode.Record) {
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Frame == rec.Index {
				c.addIWARP(&evs[i], rec)
				return
			}
		}
	}
	for i := 1; ; i++ {
		data, ci, err := r.ReadFrame()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			iw.Flush(emit)
			return evs, first, err
		}
		if i == 1 {
			first = ci.Timestamp
		}
		rec := decode.DecodeFramePorts(data, o.Ports)
		rec.Index, rec.Time, rec.Len = i, ci.Timestamp.Sub(first), max(ci.Length, len(data))
		evs = append(evs, c.frame(data, &rec, path))
		if rec.Kind == decode.KindOther {
			iw.Frame(data, i, rec.Time, emit)
		}
	}
	iw.Flush(emit)
	pairQPs(evs)
	return evs, first, nil
}
