package decode

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	iwdecode "github.com/rnic/rnic/iwarp/decode"
)

// Options configures Run.
type Options struct {
	JSON bool   // JSON Lines instead of text
	Port uint16 // RoCEv2 UDP destination port; 0 means 4791
	// Ports, if set, lists every UDP port that carries RoCEv2 (Port is
	// then ignored).
	Ports []uint16
	// Stdin, if set, is the capture a file named "-" reads (a pipe:
	// tcpdump -w - | rnic decode -).
	Stdin io.Reader
}

// Run decodes every frame of every file, writes one line per RoCEv2 (or
// undecodable RoCEv2-port) frame to w and ends with the summary line (text:
// Summary.Line; JSON: a "summary" object). With more than one file, text
// lines start with the file name and a colon; JSON objects always carry
// "file". A file that cannot be read is reported in the returned error
// (one per file, joined) and the run goes on with the next one; frames read
// before a file turned out damaged are printed and counted.
func Run(w io.Writer, files []string, o Options) (Summary, error) {
	bw := bufio.NewWriter(w)
	var sum Summary
	var errs []error
	for _, path := range files {
		if err := runFile(bw, path, len(files) > 1, o, &sum); err != nil {
			var pe *fs.PathError
			if !errors.As(err, &pe) { // a PathError already names the file
				err = fmt.Errorf("%s: %w", path, err)
			}
			errs = append(errs, err)
		}
	}
	var line []byte
	if o.JSON {
		var err error
		if line, err = AppendSummaryJSON(nil, sum); err != nil {
			errs = append(errs, err)
		}
	} else {
		line = []byte(sum.Line())
	}
	bw.Write(append(line, '\n'))
	if err := bw.Flush(); err != nil {
		errs = append(errs, fmt.Errorf("writing output: %w", err))
	}
	return sum, errors.Join(errs...)
}

// open opens the capture path names: "-" is Stdin, if set.
func (o Options) open(path string) (*Reader, error) {
	if path != "-" || o.Stdin == nil {
		return Open(path)
	}
	return NewReader(o.Stdin)
}

func runFile(w *bufio.Writer, path string, prefix bool, o Options, sum *Summary) error {
	r, err := o.open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	var first time.Time
	var line []byte
	var werr error
	write := func() {
		if werr == nil {
			if _, err := w.Write(append(line, '\n')); err != nil {
				werr = fmt.Errorf("writing output: %w", err)
			}
		}
	}
	// iWARP records, emitted while frames are fed to the TCP reassembler
	// and when the file ends.
	iw := iwdecode.New()
	emit := func(rec *iwdecode.Record) {
		sum.countIWARP(rec)
		line = line[:0]
		if o.JSON {
			var err error
			if line, err = iwdecode.AppendJSON(line, path, rec); err != nil {
				werr = cmp.Or(werr, err)
				return
			}
		} else {
			if prefix {
				line = append(append(line, path...), ": "...)
			}
			line = iwdecode.AppendText(line, rec)
		}
		write()
	}
	for i := 1; ; i++ {
		data, ci, err := r.ReadFrame()
		if errors.Is(err, io.EOF) {
			iw.Flush(emit)
			return werr
		}
		if err != nil {
			iw.Flush(emit) // what was read before the damage is reported
			return err
		}
		if i == 1 {
			first = ci.Timestamp
		}
		var rec Record
		if len(o.Ports) > 0 {
			rec = DecodeFramePorts(data, o.Ports)
		} else {
			rec = DecodeFrame(data, o.Port)
		}
		rec.Index, rec.Time, rec.Len = i, ci.Timestamp.Sub(first), max(ci.Length, len(data))
		sum.count(&rec)
		if rec.Kind == KindOther {
			iw.Frame(data, i, rec.Time, emit)
			if werr != nil {
				return werr
			}
			continue
		}
		line = line[:0]
		if o.JSON {
			if line, err = AppendJSON(line, path, &rec); err != nil {
				return err
			}
		} else {
			if prefix {
				line = append(append(line, path...), ": "...)
			}
			line = AppendText(line, &rec)
		}
		if write(); werr != nil {
			return werr
		}
	}
}
