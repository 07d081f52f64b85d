package iwconform

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/tools/conform/iwport"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

// Case is one iWARP conformance rule, checked by a script: a connection
// set up as Setup says, then Steps in order. A step's error is the case's
// FAIL (or, for NotApplicable, its not-applicable verdict).
type Case struct {
	ID      string // the rule, named after its RFC section
	Section string // e.g. "RFC 5040 §4.8"
	Title   string
	Setup   Setup
	Steps   []Step
	// Break is a fault that makes an in-process rnic NIC break the rule;
	// the suite's self-test runs every case with it and wants FAIL.
	Break iwport.Fault
	// Deviations lists known deviations by DUT kind, with their reference
	// (../shared/reference/protocols.md).
	Deviations map[string]string
}

// Step is one step of a case.
type Step struct {
	Name string
	Do   func(s *Session) error
}

// Verdict is a case's outcome.
type Verdict string

// Verdicts.
const (
	Pass          Verdict = "pass"
	Fail          Verdict = "FAIL"
	Deviation     Verdict = "deviation-known"
	NotApplicable Verdict = "not-applicable"
)

// Result is a case's verdict with its evidence.
type Result struct {
	ID, Section, Title string
	Verdict            Verdict
	// Evidence is one line: what was seen, with capture frame numbers.
	Evidence string
}

// notApplicable is a step's way to say the DUT lacks the feature.
type notApplicable struct{ why string }

func (n notApplicable) Error() string { return n.why }

// NA returns the error that makes a case not-applicable.
func NA(format string, a ...any) error { return notApplicable{fmt.Sprintf(format, a...)} }

// Env is where the cases run.
type Env struct {
	DUT DUT
	// Tester is the tester's own address (its port binds and listens
	// there); the DUT's address if invalid.
	Tester netip.Addr
	// Pcap records every connection (nil: none).
	Pcap *transport.PcapWriter
	// Wait bounds each expectation (DefaultWait if zero); a case that
	// expects silence waits Quiet (DefaultQuiet if zero).
	Wait, Quiet time.Duration
}

// Defaults of Env.
const (
	DefaultWait  = 3 * time.Second
	DefaultQuiet = 300 * time.Millisecond
)

// Session is one run of a case: the connection and the DUT's objects.
type Session struct {
	Ctx  context.Context
	Env  *Env
	DUT  DUT
	Port *iwport.Port
	QP   QP
	MR   MR // the DUT's buffer (MRSize bytes, Setup.Access)
	// Req and Rep are the MPA Request and Reply as sent (by whichever
	// side), once exchanged.
	Req, Rep wire.MPAFrame
	// LastSent is the last ULPDU the tester sent: what a Terminate's
	// headers must repeat.
	LastSent iwport.Sent
	// Accepted receives the outcome of the DUT's Accept or Connect.
	Accepted chan error
	// AcceptPD is the private data the DUT's rdma_cm reported.
	AcceptPD []byte
	msn      [4]uint32 // next MSN the tester sends, per queue
	notes    []string
	listener *iwport.Listener
	wcs      []verbs.WC
	lastRR   wire.ReadRequestFields // the DUT's last Read Request
	RTR      *iwport.Frame          // the DUT's RTR, when it connected in peer-to-peer mode
}

// MRSize is the size of the DUT's buffer.
const MRSize = 4096

// Note adds to the case's evidence.
func (s *Session) Note(format string, a ...any) { s.notes = append(s.notes, fmt.Sprintf(format, a...)) }

func (s *Session) wait() time.Duration  { return or(s.Env.Wait, DefaultWait) }
func (s *Session) quiet() time.Duration { return or(s.Env.Quiet, DefaultQuiet) }

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Run runs c in env.
func Run(ctx context.Context, env *Env, c *Case) Result {
	r := Result{ID: c.ID, Section: c.Section, Title: c.Title}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &Session{Ctx: ctx, Env: env, DUT: env.DUT, Accepted: make(chan error, 1)}
	defer s.close()
	err := s.setup(&c.Setup)
	for i := 0; err == nil && i < len(c.Steps); i++ {
		if err = c.Steps[i].Do(s); err != nil {
			err = fmt.Errorf("%s: %w", c.Steps[i].Name, err)
		}
	}
	var na notApplicable
	switch {
	case err == nil:
		r.Verdict = Pass
	case errors.As(err, &na):
		r.Verdict = NotApplicable
		s.Note("%v", err)
	default:
		r.Verdict = Fail
		s.Note("%v", err)
		if ref, ok := c.Deviations[env.DUT.Kind()]; ok {
			r.Verdict = Deviation
			s.Note("known: %s", ref)
		}
	}
	r.Evidence = strings.Join(s.notes, "; ")
	return r
}

func (s *Session) close() {
	if s.Port != nil {
		s.Port.Abort()
	}
	if s.listener != nil {
		s.listener.Close()
	}
}

// setup creates the DUT's QP and MR and makes the connection.
func (s *Session) setup(st *Setup) error {
	var err error
	if s.QP, err = s.DUT.NewQP(s.Ctx); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	access := st.Access
	if access == 0 {
		access = memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	}
	if s.MR, err = s.DUT.RegMR(s.Ctx, MRSize, access); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	for i := 0; i < st.Recvs; i++ {
		if err := s.DUT.PostRecv(s.Ctx, s.QP, uint64(100+i), s.MR, i*256, 256); err != nil {
			return fmt.Errorf("setup: post receive: %w", err)
		}
	}
	for i := range s.msn {
		s.msn[i] = 1
	}
	if st.DUTConnects {
		return s.dutConnects(st)
	}
	return s.dutListens(st)
}

func (s *Session) testerAddr() netip.Addr {
	if s.Env.Tester.IsValid() {
		return s.Env.Tester
	}
	return s.DUT.Addr()
}
