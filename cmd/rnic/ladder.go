package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/cmd/internal/ladder"
	"github.com/rnic/rnic/cmd/internal/sim"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/transport"
)

const ladderHelp = `usage: rnic ladder [flags] CAPTURE -o OUT.svg|OUT.html

Draws a ladder (sequence) diagram of a capture: one vertical lane per
endpoint (address; with --by-qp one per RoCE QP or iWARP TCP endpoint), one
arrow per frame in frame order, labelled from its rnic decode line (opcode,
PSN, RETH va/len, AETH syndrome and MSN, atomic operands, DDP STag/TO or
QN/MSN/MO, MPA Request/Reply, IB CM message). Colour is the frame's role
(request, response, ACK, NAK, RNR NAK, connection setup, plain TCP,
undecodable); a dashed line is a retransmission (a request PSN sent again),
a dotted one a duplicate ACK or response, a red crossed ring a bad ICRC or
MPA CRC, a square at the tail a TCP segment that completed an FPDU. A pause
longer than --gap is drawn as a marked break; runs of Middle packets of one
message become one band. The legend in the diagram says the same.

OUT.svg is an SVG 1.1 document; OUT.html one self-contained page with the
diagram, where clicking an arrow shows the frame's full decode (text and
fields) and a link to the spec section, bands expand on click, and a QP
filter hides other QPs' frames.

--from and --to take a frame number (123) or a time since the first frame
(1.5s, 200ms); --qp a QP number (0x11 or 17).

Exit status: 0 drawn; 2 bad usage or a capture that cannot be read.

flags:
`

func runLadder(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("rnic ladder", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.StringP("output", "o", "", "output file: .svg or .html")
	byQP := fs.Bool("by-qp", false, "one lane per QP (RoCE) or TCP endpoint (iWARP)")
	from := fs.String("from", "", "first frame number or time (e.g. 120, 0.5s)")
	to := fs.String("to", "", "last frame number or time")
	qp := fs.String("qp", "", "only frames to or from this QP")
	gap := fs.Duration("gap", 10*time.Millisecond, "pauses longer than this are drawn as marked breaks")
	ports := fs.UintSlice("port", []uint{4791}, "RoCEv2 UDP destination port(s)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), ladderHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "rnic ladder: %v (rnic help ladder)\n", err)
		return 2
	}
	o, err := ladderOptions(fs, *out, *from, *to, *qp, *ports)
	if err != nil {
		fmt.Fprintf(stderr, "rnic ladder: %v (rnic help ladder)\n", err)
		return 2
	}
	o.ByQP, o.Gap = *byQP, *gap
	evs, err := ladder.Load(fs.Arg(0), o)
	if err != nil {
		fmt.Fprintf(stderr, "rnic ladder: %v\n", err)
		return 2
	}
	if err := writeLadder(*out, evs, o); err != nil {
		fmt.Fprintf(stderr, "rnic ladder: %v\n", err)
		return 2
	}
	return 0
}

func ladderOptions(fs *pflag.FlagSet, out, from, to, qp string, ports []uint) (ladder.Options, error) {
	o := ladder.Options{Title: fs.Arg(0)}
	if fs.NArg() != 1 {
		return o, errors.New("give exactly one capture file")
	}
	if err := ladderOutput(out); err != nil {
		return o, fmt.Errorf("-o: %w", err)
	}
	var err error
	if o.From, o.FromTime, err = frameOrTime(from); err != nil {
		return o, fmt.Errorf("--from: %w", err)
	}
	if o.To, o.ToTime, err = frameOrTime(to); err != nil {
		return o, fmt.Errorf("--to: %w", err)
	}
	if qp != "" {
		n, err := strconv.ParseUint(qp, 0, 24)
		if err != nil || n == 0 {
			return o, fmt.Errorf("--qp %q: not a QP number (1..0xffffff)", qp)
		}
		o.QP = int(n)
	}
	for _, p := range ports {
		if p == 0 || p > 65535 {
			return o, fmt.Errorf("bad port %d", p)
		}
		o.Ports = append(o.Ports, uint16(p))
	}
	return o, nil
}

// ladderOutput checks the name of a diagram file: its suffix says the
// format.
func ladderOutput(path string) error {
	if !strings.HasSuffix(path, ".svg") && !strings.HasSuffix(path, ".html") {
		return fmt.Errorf("output %q: give FILE.svg or FILE.html", path)
	}
	return nil
}

// frameOrTime parses "123" (a frame number) or a duration ("1.5s").
func frameOrTime(s string) (int, time.Duration, error) {
	if s == "" {
		return 0, 0, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		return n, 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, 0, fmt.Errorf("%q is neither a frame number nor a time like 1.5s", s)
	}
	return 0, d, nil
}

func writeLadder(path string, evs []ladder.Event, o ladder.Options) error {
	return createLadder(path, func(w io.Writer, html bool) error {
		if html {
			return ladder.WriteHTML(w, evs, o)
		}
		return ladder.WriteSVG(w, evs, o)
	})
}

// createLadder creates the file at path and has draw write the diagram
// into it: the interactive page for a name ending in .html, else SVG.
func createLadder(path string, draw func(w io.Writer, html bool) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = draw(f, strings.HasSuffix(path, ".html"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// simLadder collects what `rnic sim --ladder` draws: the link's capture,
// its notes (frames lost, duplicated, corrupted, delayed) and the engines'
// timer expiries and RNR waits.
type simLadder struct {
	path  string
	pcap  bytes.Buffer
	truth ladder.Truth
}

// newSimLadder checks the output name and hooks the collection into cfg
// (after --pcap, whose file still gets every frame).
func newSimLadder(path string, cfg *sim.Config) (*simLadder, error) {
	if err := ladderOutput(path); err != nil {
		return nil, fmt.Errorf("--ladder: %w", err)
	}
	l := &simLadder{path: path, truth: ladder.Truth{Notes: map[int]transport.LinkNote{}}}
	if cfg.Pcap != nil {
		cfg.Pcap = io.MultiWriter(cfg.Pcap, &l.pcap)
	} else {
		cfg.Pcap = &l.pcap
	}
	cfg.LinkNotes = func(record int, n transport.LinkNote) { l.truth.Notes[record] |= n }
	cfg.TraceEvents = func(node string, e embedded.TraceEvent) {
		if m, ok := ladder.TraceMark(transport.PcapEpoch.Add(e.Time), node, e.QPN, e.Msg); ok {
			l.truth.Marks = append(l.truth.Marks, m)
		}
	}
	return l, nil
}

// write draws the run.
func (l *simLadder) write(title string) error {
	o := ladder.Options{Title: title, Gap: time.Millisecond}
	evs, start, err := ladder.LoadReader(bytes.NewReader(l.pcap.Bytes()), "sim", o)
	if err != nil {
		return fmt.Errorf("ladder: %w", err)
	}
	return writeLadder(l.path, ladder.Annotate(evs, start, l.truth), o)
}

// demoMarks collects the timer expiries and RNR waits of `rnic demo
// --ladder` from both engines' traces. The demo runs on the real clock and
// its capture is stamped with the wall clock, so a mark is stamped with the
// wall clock as the engine reports it: before the frames it causes (a
// resend is sent after its timer's event is traced).
type demoMarks struct {
	mu    sync.Mutex
	marks []ladder.Mark
}

// event is the demo's Config.TraceEvents.
func (m *demoMarks) event(node string, e embedded.TraceEvent) {
	mark, ok := ladder.TraceMark(time.Now(), node, e.QPN, e.Msg)
	if !ok {
		return
	}
	m.mu.Lock()
	m.marks = append(m.marks, mark)
	m.mu.Unlock()
}

// truth is what the engines reported (nil m: nothing).
func (m *demoMarks) truth() ladder.Truth {
	if m == nil {
		return ladder.Truth{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return ladder.Truth{Marks: append([]ladder.Mark(nil), m.marks...)}
}

// demoLadder draws the capture of `rnic demo --ladder` once the demo has
// run (status is the demo's; a usage error draws nothing), with the marks
// the engines reported (nil: none).
func demoLadder(status int, path, pcapPath string, port uint16, marks *demoMarks, stderr io.Writer) int {
	if status == 2 {
		return status
	}
	if pcapPath == "" {
		fmt.Fprintln(stderr, "rnic demo: --ladder draws the capture: give --pcap FILE too")
		return 2
	}
	o := ladder.Options{Title: "rnic demo (" + pcapPath + ")", Ports: []uint16{port, port + 1}}
	err := drawDemo(path, pcapPath, marks.truth(), o)
	if err != nil {
		fmt.Fprintf(stderr, "rnic demo: ladder: %v\n", err)
		return max(status, 2)
	}
	return status
}

// drawDemo draws the capture at pcapPath with t's marks.
func drawDemo(path, pcapPath string, t ladder.Truth, o ladder.Options) error {
	f, err := os.Open(pcapPath)
	if err != nil {
		return err
	}
	defer f.Close()
	evs, start, err := ladder.LoadReader(f, pcapPath, o)
	if err != nil {
		return fmt.Errorf("%s: %w", pcapPath, err)
	}
	return writeLadder(path, ladder.Annotate(evs, start, t), o)
}
