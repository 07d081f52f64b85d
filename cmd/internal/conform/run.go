// Running one case: the DUT's setup through the agent, the steps, the
// verdict and its evidence.

package conform

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/pcap"
)

// Config is what a run of the suite works with.
type Config struct {
	Agent *agentproto.Client
	// Info is the DUT's device_info (fetched by Prepare if empty).
	Info agentproto.DeviceInfo
	// Port is the tester's RoCEv2 port; IWARP its iWARP side.
	Port  *FramePort
	IWARP *IWARPPort
	// TesterAddr is the tester's IP; DUTAddr the DUT's (zero: the DUT's
	// first GID of the tester's address family).
	TesterAddr netip.Addr
	DUTAddr    netip.Addr
	// TesterQPN is the QPN the tester's side plays (0x11 if zero... any
	// value the DUT can address).
	TesterQPN uint32
	// Slow multiplies every wait bound of the steps (1 if zero): a slow
	// DUT or a busy machine.
	Slow float64
	// Breaker, set by a self-test, applies a case's Break to the
	// in-process DUT for one run of the case and returns its undo.
	Breaker func(b *Break) (restore func())
	// Pcap, if set, is the run's capture: each result records the
	// frames its case added to it (Result.Frames).
	Pcap *pcap.Writer
}

// Prepare fills the Config's defaults from the agent.
func (cfg *Config) Prepare() error {
	if cfg.Info.Name == "" {
		info, err := cfg.Agent.DeviceInfo()
		if err != nil {
			return err
		}
		cfg.Info = info
	}
	if cfg.TesterQPN == 0 {
		cfg.TesterQPN = 0x000111
	}
	if cfg.Slow == 0 {
		cfg.Slow = 1
	}
	if !cfg.DUTAddr.IsValid() {
		a, err := pickGID(cfg.Info.GIDs, cfg.TesterAddr)
		if err != nil {
			return err
		}
		cfg.DUTAddr = a
	}
	return nil
}

// pickGID returns the first of the DUT's GIDs in the tester's address
// family (not link-local).
func pickGID(gids []string, tester netip.Addr) (netip.Addr, error) {
	for _, s := range gids {
		g, err := netip.ParseAddr(s)
		if err != nil || g.IsLinkLocalUnicast() {
			continue
		}
		if g.Unmap().Is4() == tester.Unmap().Is4() {
			return g.Unmap(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("conform: the DUT has no GID of the tester's address family (%v): %v", tester, gids)
}

// runs counts the cases run: each run's tester QPN differs, so frames
// a previous case's QP still had on the way are told apart.
var runs atomic.Uint32

// Each tester process starts its runs at a QPN of its own: a process
// that runs one case after another's (make conform-lab runs case by
// case) would otherwise play the same QPN, comm ID and rdma_cm port, and
// take the DREQ of the earlier process's torn-down connection for its own.
func init() { runs.Store(uint32(time.Now().UnixNano()>>10) % 0x1000) }

// Run is one case's run: what its steps work with.
type Run struct {
	Case  *Case
	Cfg   *Config
	Agent *agentproto.Client
	Info  agentproto.DeviceInfo
	Port  *FramePort
	// PD, CQ (the QP's send and receive CQ) and QP are the DUT's objects.
	PD uint32
	CQ uint32
	QP agentproto.QPInfo
	// Attrs are the QP's attributes as brought up.
	Attrs QPAttrs
	// TesterQPN is the QPN the tester plays; DUTAddr the DUT's IP.
	TesterQPN uint32
	DUTAddr   netip.Addr
	MRs       map[string]agentproto.MRInfo
	// Vars is for steps to hand values to later steps.
	Vars     map[string]any
	notes    []string
	findings []Finding
	cleanups []func()
	pending  []Frame
	// Last is the last frame an Expect matched.
	Last Frame
	// Sent is the capture number of the tester's last frame (sendPeer).
	Sent int
}

// MR returns the DUT's MR of that name (zero if the setup has none).
func (r *Run) MR(name string) agentproto.MRInfo { return r.MRs[name] }

// PSN returns the tester's request PSN rel packets after its first (the
// DUT's initial expected PSN).
func (r *Run) PSN(rel int) uint32 { return wire.PSNAdd(r.Attrs.RQPSN, rel) }

// DUTPSN returns the DUT's request PSN rel packets after its first.
func (r *Run) DUTPSN(rel int) uint32 { return wire.PSNAdd(r.Attrs.SQPSN, rel) }

// Bound scales a wait bound by the run's Slow factor.
func (r *Run) Bound(d time.Duration) time.Duration { return time.Duration(float64(d) * r.Cfg.Slow) }

// Note adds to the case's evidence line.
func (r *Run) Note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// Verdict is a case's outcome.
type Verdict string

// Verdicts. FAIL is the DUT breaking the case's rule; could-not-run is a
// case that never got as far as judging it (its setup failed, the agent
// stopped answering, the DUT's reply did not parse), which says nothing of
// the rule; DUT-crashed is a case during which the DUT's host died (the
// lab harness sees it in the guest kernel's log), whatever the case's own
// verdict was (Result.Crash keeps it).
const (
	Pass          Verdict = "pass"
	Fail          Verdict = "FAIL"
	DeviationSeen Verdict = "deviation-known"
	NotApplicable Verdict = "not-applicable"
	CouldNotRun   Verdict = "could-not-run"
	DUTCrashed    Verdict = "DUT-crashed"
)

// Result is one case's outcome.
type Result struct {
	ID        string        `json:"id"`
	Section   string        `json:"section"`
	Title     string        `json:"title"`
	Transport Transport     `json:"transport"`
	Verdict   Verdict       `json:"verdict"`
	Evidence  string        `json:"evidence"`
	Detail    string        `json:"detail,omitempty"`
	Ref       string        `json:"ref,omitempty"`
	Broken    string        `json:"broken,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
	// Findings are departures from the spec the case came across on the
	// way to its own rule (a Terminate laid out wrongly, say): each names
	// its root cause, so that a report lists it once for every case.
	Findings []Finding `json:"findings,omitempty"`
	// Frames are the first and last frame of the run's capture that the
	// case added (zero without a capture).
	Frames [2]int `json:"frames,omitempty"`
	// Crash is set when the verdict is DUT-crashed.
	Crash *Crash `json:"crash,omitempty"`
}

// Crash is what the DUT's host logged when it died during a case, and
// the verdict the case itself reached.
type Crash struct {
	// Line is the first line of note (the BUG or oops); Log the kernel's
	// log from there on, as much as was read.
	Line string   `json:"line"`
	Log  []string `json:"log,omitempty"`
	// Verdict and Detail are the case's own.
	Verdict Verdict `json:"verdict"`
	Detail  string  `json:"detail,omitempty"`
}

// MarkCrashed turns the result into DUT-crashed, keeping its own verdict
// in the Crash beside the kernel's log.
func (res *Result) MarkCrashed(line string, log []string) {
	if res.Crash != nil {
		return
	}
	res.Crash = &Crash{Line: line, Log: log, Verdict: res.Verdict, Detail: res.Detail}
	res.Verdict = DUTCrashed
	res.Detail = "the DUT's kernel logged " + strconv.Quote(line)
}

// ErrCouldNotRun is what the error of a case that could not judge its
// rule matches (errors.Is): see CannotRun.
var ErrCouldNotRun = errors.New("could not run")

// cannotRun marks an error that kept a case from judging its rule; its
// text is the error's own.
type cannotRun struct{ err error }

func (e cannotRun) Error() string        { return e.err.Error() }
func (e cannotRun) Unwrap() error        { return e.err }
func (e cannotRun) Is(target error) bool { return target == ErrCouldNotRun }

// CannotRun marks err as one that kept the case from judging its rule:
// the verdict is could-not-run, not FAIL.
func CannotRun(err error) error { return cannotRun{err} }

// RunCase runs c once; with broken set its Break is applied first
// (Config.Breaker must be set).
func RunCase(cfg *Config, c Case, broken bool) (res Result) {
	res = Result{ID: c.ID, Section: c.Section, Title: c.Title, Transport: c.Transport}
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	if c.Needs != nil {
		if why := c.Needs(cfg.Info); why != "" {
			res.Verdict, res.Detail = NotApplicable, why
			return res
		}
	}
	if broken {
		if cfg.Breaker == nil || c.Break == nil {
			res.Verdict, res.Detail = Fail, "no way to break the DUT"
			return res
		}
		res.Broken = c.Break.Name
		defer cfg.Breaker(c.Break)()
	}
	r := newRun(cfg, &c)
	first := cfg.frames()
	err := r.setup()
	if err != nil {
		err = CannotRun(fmt.Errorf("setup: %w", err))
	} else {
		err = r.steps()
	}
	if cfg.Port != nil {
		cfg.Port.Drain()
	}
	r.teardown()
	if last := cfg.frames(); last > first {
		res.Frames = [2]int{first + 1, last}
	}
	res.Findings = r.findings
	res.Evidence = strings.Join(r.notes, "; ")
	res.Verdict, res.Detail, res.Ref = judge(cfg.Info, &c, err)
	return res
}

// frames is how many frames the run's capture holds so far.
func (cfg *Config) frames() int {
	if cfg.Pcap == nil {
		return 0
	}
	return cfg.Pcap.Frames()
}

func newRun(cfg *Config, c *Case) *Run {
	qpn := (cfg.TesterQPN + runs.Add(1)%0x1000) & wire.PSNMask
	return &Run{Case: c, Cfg: cfg, Agent: cfg.Agent, Info: cfg.Info, Port: cfg.Port,
		TesterQPN: qpn, DUTAddr: cfg.DUTAddr, MRs: map[string]agentproto.MRInfo{}, Vars: map[string]any{}}
}

// Cleanup registers f to run when the case ends, whatever its verdict
// (closing a stream the case opened, say); last registered runs first.
func (r *Run) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *Run) teardown() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func (r *Run) steps() error {
	for i, s := range r.Case.Steps {
		if err := s.Do(r); err != nil {
			return fmt.Errorf("step %d (%v): %w", i+1, s, err)
		}
	}
	return nil
}

// judge turns a run's error into its verdict.
func judge(info agentproto.DeviceInfo, c *Case, err error) (v Verdict, detail, ref string) {
	if err == nil {
		return Pass, "", ""
	}
	var ae *agentproto.Error
	if errors.Is(err, ErrNotApplicable) || errors.As(err, &ae) && ae.Code == agentproto.CodeUnsupported {
		return NotApplicable, err.Error(), ""
	}
	if errors.Is(err, ErrCouldNotRun) || errors.Is(err, agentproto.ErrNoAnswer) {
		return CouldNotRun, err.Error(), ""
	}
	for _, d := range c.Deviations {
		if d.Kind == info.Kind {
			return DeviationSeen, err.Error(), d.Ref
		}
	}
	return Fail, err.Error(), ""
}

// defaultAttrs are the QP attributes of the zero Setup. The PSNs sit a few
// packets below the 24-bit wrap, differing per case, so that every case
// crosses it.
func (r *Run) defaultAttrs() QPAttrs {
	h := fnv.New32a()
	h.Write([]byte(r.Case.ID))
	v := h.Sum32()
	mtu := verbs.MTUFromBytes(r.Info.ActiveMTU)
	if mtu == 0 || mtu > verbs.MTU1024 {
		mtu = verbs.MTU1024
	}
	return QPAttrs{
		Access:          memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic,
		PathMTU:         mtu,
		RQPSN:           wire.PSNAdd(0, -int(2+v%6)),
		SQPSN:           wire.PSNAdd(0, -int(3+(v>>8)%6)),
		MaxRdAtomic:     4,
		MaxDestRdAtomic: 4,
		MinRNRTimer:     12,
		Timeout:         14,
		RetryCnt:        7,
		RNRRetry:        7,
		QKey:            0x11111111,
	}
}
