package conform

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// Transport is the RDMA transport a case speaks.
type Transport string

// Transports.
const (
	RoCE  Transport = "roce"
	IWARP Transport = "iwarp"
)

// Case is one conformance check: a declarative script named after the
// spec rule it checks.
type Case struct {
	// ID is the rule id ("C9-105"); when one rule yields several cases a
	// suffix tells them apart ("C9-105/write"). IDs are unique.
	ID string
	// Section is where the rule is ("IBTA Vol 1 §9.7.5.1.4",
	// "RFC 5044 §7.1").
	Section string
	// Title says in one line what the DUT must do.
	Title     string
	Transport Transport
	// Setup is the DUT side prepared before the steps.
	Setup Setup
	// Steps run in order; the first that fails decides the verdict.
	Steps []Step
	// Needs, if set, says why the DUT cannot run the case ("" if it
	// can): the verdict is then not-applicable.
	Needs func(info agentproto.DeviceInfo) string
	// Deviations are failures known for some DUT kinds: a FAIL on such
	// a DUT is reported as deviation-known, citing the reference.
	Deviations []Deviation
	// Break is a fault on an in-process rnic DUT under which the case
	// must FAIL: the self-test runs each case plain (must pass) and
	// broken (must FAIL). Every case has one.
	Break *Break
}

// Deviation is a known departure from the rule by one kind of DUT.
type Deviation struct {
	// Kind is DeviceInfo.Kind ("rxe", "siw", a driver name).
	Kind string
	// Ref is where it is documented, a file of the repository from its
	// root: an entry of this package's README ("cmd/internal/conform/
	// README.md: rxe retries", after its heading) or the rnic file that
	// records the behaviour ("iwarp/wire/fpdu.go (FPDU pad)").
	Ref string
	// Note says what the DUT does instead.
	Note string
}

// Break is a deliberate fault on an in-process rnic DUT (SelfDUT). Out
// and In see the RoCEv2 frames the DUT sends and receives; Apply may set
// anything else on the DUT (an engine knob, an iWARP stream fault) and
// returns how to undo it.
type Break struct {
	// Name says what the broken DUT does wrong.
	Name string
	Out  FrameFault
	In   FrameFault
	// Fresh, for faults with state (the n-th frame of a kind), returns a
	// new pair for each run; they apply after Out and In.
	Fresh func() (out, in FrameFault)
	Apply func(d *SelfDUT) (restore func())
	// Stream, for iWARP cases, returns a fresh fault for the in-process
	// iWARP DUT's TCP streams (SelfIWARP): it sees the MPA frames and
	// FPDUs the DUT sends (iwport.Out) and receives (iwport.In).
	Stream func() iwport.Fault
}

// FrameFault rewrites one frame: it returns the frame to pass on (frame
// itself, edited in place, or another slice) or nil to drop it. frame is
// the fault's own copy. A fault that edits covered bytes re-seals the
// ICRC (Reseal) unless breaking the ICRC is the point.
type FrameFault func(frame []byte) []byte

// Setup prepares the DUT before a case's steps. The zero Setup gives an
// RC QP in RTS connected to the tester's QP, with one 4 KiB MR named
// DefaultMR allowing every remote access and no receives posted.
type Setup struct {
	// QPType is the DUT QP's type (RC if zero).
	QPType verbs.QPType
	// MRs are registered in order; none means one DefaultMR.
	MRs []MR
	// Recvs receive WRs are posted to the QP before the steps, each
	// RecvLen bytes (default 1024) of RecvMR (default DefaultMR) from
	// offset 0; their wr_ids are 1, 2, ...
	Recvs   int
	RecvLen int
	RecvMR  string
	// Attr, if set, adjusts the QP attributes before the QP is brought up.
	Attr func(a *QPAttrs)
	// State is the state the QP is brought to: RTS if zero, INIT or RTR
	// to stop earlier.
	State verbs.QPState
	// Reset leaves the QP in RESET, as created, for steps that bring it up
	// themselves.
	Reset bool
	// Custom, if set, replaces the RoCE bring-up: an iWARP or rdma_cm case
	// connects through the CM itself. MRs and the CQ exist when it runs.
	Custom func(r *Run) error
}

// MR is a memory region the DUT registers.
type MR struct {
	Name   string
	Len    int
	Access memory.Access
	// Fill, if set, is written over the region, repeated, before the case.
	Fill []byte
}

// DefaultMR is the name of the MR of the zero Setup.
const DefaultMR = "mr"

// QPAttrs are the attributes the setup brings the DUT's QP up with. PSNs
// are absolute; the run chooses them (near the 24-bit wrap, to catch PSN
// arithmetic errors) unless Attr changes them.
type QPAttrs struct {
	Access          memory.Access
	PathMTU         verbs.MTU
	RQPSN           uint32 // the DUT's expected PSN = the tester's first request PSN
	SQPSN           uint32 // the DUT's first request PSN
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	MinRNRTimer     uint8
	Timeout         uint8
	RetryCnt        uint8
	RNRRetry        uint8
	PKeyIndex       uint16
	QKey            uint32
}

// Step is one action or expectation of a case. Do returns an error that
// says what was wrong (a FAIL), or wraps ErrNotApplicable. String names
// the step in a FAIL's detail.
type Step interface {
	Do(r *Run) error
	String() string
}

// ErrNotApplicable is what a step's error wraps when the DUT lacks what the
// case needs.
var ErrNotApplicable = fmt.Errorf("not applicable")

var registry struct {
	sync.Mutex
	cases []Case
	ids   map[string]bool
}

// Register adds cases to the suite; each case file registers its own from
// an init function. A duplicate ID or a case without a Break panics: it is
// a programming error found by the first test run.
func Register(cases ...Case) {
	registry.Lock()
	defer registry.Unlock()
	if registry.ids == nil {
		registry.ids = map[string]bool{}
	}
	for _, c := range cases {
		if c.ID == "" || registry.ids[c.ID] {
			panic(fmt.Sprintf("conform: case id %q empty or registered twice", c.ID))
		}
		if c.Break == nil {
			panic(fmt.Sprintf("conform: case %s has no Break", c.ID))
		}
		registry.ids[c.ID] = true
		registry.cases = append(registry.cases, c)
	}
}

// Cases returns the registered cases of transport t ("" for all) whose ID,
// section or title contains only (case-insensitive; "" for all), sorted by
// transport then ID.
func Cases(t Transport, only string) []Case {
	registry.Lock()
	defer registry.Unlock()
	var out []Case
	for _, c := range registry.cases {
		if (t == "" || c.Transport == t) && matches(c, only) {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Transport != out[j].Transport {
			return out[i].Transport > out[j].Transport // roce before iwarp
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func matches(c Case, only string) bool {
	if only == "" {
		return true
	}
	for _, alt := range strings.Split(strings.ToLower(only), ",") {
		if alt = strings.TrimSpace(alt); alt == "" {
			continue
		}
		// "=ID" names one case exactly: an ID may be a prefix of another's.
		if id, ok := strings.CutPrefix(alt, "="); ok {
			if strings.EqualFold(c.ID, id) {
				return true
			}
			continue
		}
		for _, s := range []string{c.ID, c.Section, c.Title} {
			if strings.Contains(strings.ToLower(s), alt) {
				return true
			}
		}
	}
	return false
}
