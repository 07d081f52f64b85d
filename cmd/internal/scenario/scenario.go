package scenario

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/transport"
)

// A Scenario is one protocol behaviour, shown by a short deterministic run.
type Scenario struct {
	Name  string // what `rnic lab run` takes
	Title string
	// Spec is where the behaviour is defined.
	Spec string
	// Look says, in a few sentences, what to look for in the output.
	Look string
	// iwarp: the stage is two iWARP NICs on a simulated TCP network.
	iwarp bool
	// iwarpForm is the same behaviour shown over iWARP (rnic lab run
	// NAME --iwarp), where it has one.
	iwarpForm *Scenario
	// script decides the fate of the link's frames (nil: none is touched;
	// RoCEv2 only).
	script func() transport.Script
	// qp is the QP pair's type and attributes (nil: rc); an iWARP
	// scenario's pair is connected through the connection manager.
	qp *qpOptions
	// steps drive the run on the stage, with the pair a (on rnic0) and b
	// (on rnic1) ready.
	steps func(s *stage, a, b *end) error
}

// Run is the outcome of a scenario.
type Run struct {
	// Output is the narration: every post and completion with its virtual
	// time, the QPs' final states and the counters that moved.
	Output string
	// Trace is the engines' trace, one line per decision.
	Trace string
	// Log is the narration and the trace together, in the order they
	// happened.
	Log string
	// Pcap is the capture of the link: pcapng, each frame the script lost
	// or changed with a comment saying so ("rnic: lost").
	Pcap []byte
	// Notes are what the link did to captured frames, by record number.
	Notes map[int]transport.LinkNote
	// Marks are the engines' trace events, by NIC.
	Marks []Mark

	scenario *Scenario
}

// Mark is one engine trace event of a run.
type Mark struct {
	Node string
	embedded.TraceEvent
}

// scenarios are every scenario, in teaching order.
var scenarios = append(append([]*Scenario(nil), roceScenarios...), iwarpScenarios...)

// All lists the scenarios in teaching order.
func All() []*Scenario { return scenarios }

// Find returns the scenario called name.
func Find(name string) (*Scenario, error) {
	for _, sc := range scenarios {
		if sc.Name == name {
			return sc, nil
		}
	}
	var names []string
	for _, sc := range scenarios {
		names = append(names, sc.Name)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("no scenario %q (rnic lab list names them: %v)", name, names)
}

// IWARP returns the scenario's iWARP form: itself when it is one, the form
// it names, else an error saying why there is none.
func (sc *Scenario) IWARP() (*Scenario, error) {
	switch {
	case sc.iwarp:
		return sc, nil
	case sc.iwarpForm != nil:
		return sc.iwarpForm, nil
	}
	return nil, fmt.Errorf("%s has no iWARP form: below iWARP, TCP resends what is lost, and iWARP has no PSNs, ACKs or NAKs of its own (the iWARP scenarios: %s)", sc.Name, iwarpNames())
}

// iwarpNames lists the scenarios that run over iWARP.
func iwarpNames() string {
	var names []string
	for _, sc := range scenarios {
		if sc.iwarp || sc.iwarpForm != nil {
			names = append(names, sc.Name)
		}
	}
	return strings.Join(names, ", ")
}

// Run runs the scenario: the same output, trace and capture every time.
func (sc *Scenario) Run() (*Run, error) { return sc.runOn(stageConfig{iwarp: sc.iwarp}) }

// runOn runs the scenario on the stage cfg asks for, with cfg's output
// writers and script filled in here.
func (sc *Scenario) runOn(cfg stageConfig) (*Run, error) {
	var out, trace, log, pcap bytes.Buffer
	// On TAP NICs the engines trace from goroutines of their own while the
	// steps narrate: one lock keeps the log's lines whole and in order.
	var mu sync.Mutex
	cfg.trace = &lockedWriter{mu: &mu, w: io.MultiWriter(&trace, &log)}
	cfg.pcap = &pcap
	if sc.script != nil {
		cfg.script = sc.script()
	}
	s, err := newStage(cfg, &lockedWriter{mu: &mu, w: io.MultiWriter(&out, &log)})
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	fmt.Fprintf(s.out, "scenario %s: %s\n", sc.Name, sc.Title)
	s.startCounting()
	err = sc.run(s)
	s.settle()
	s.counters()
	if cerr := s.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	mu.Lock()
	defer mu.Unlock()
	r := &Run{Output: out.String(), Trace: trace.String(), Log: log.String(), Pcap: pcap.Bytes(), Notes: s.notes,
		Marks: s.marks, scenario: sc}
	return r, nil
}

// lockedWriter writes to w under mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// run connects the scenario's QP pair and runs its steps.
func (sc *Scenario) run(s *stage) error {
	var a, b *end
	var err error
	switch {
	case sc.iwarp:
		a, b, err = s.iwarpPair()
	case sc.qp != nil:
		a, b, err = s.pair(*sc.qp)
	default:
		a, b, err = s.pair(rc)
	}
	if err != nil {
		return err
	}
	return sc.steps(s, a, b)
}

// Describe writes the scenario's title, spec section and what to look for.
func (sc *Scenario) Describe(w io.Writer) {
	fmt.Fprintf(w, "%s: %s\n  defined in: %s\n  look for: %s\n", sc.Name, sc.Title, sc.Spec, sc.Look)
}
