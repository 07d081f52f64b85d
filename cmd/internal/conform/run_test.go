package conform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

func TestJudge(t *testing.T) {
	c := &Case{Deviations: []Deviation{{Kind: "rxe", Ref: "cmd/internal/conform/README.md: rxe credits"}}}
	fail := errors.New("step 2: AETH ACK, want ACK credits=3")
	for _, tc := range []struct {
		kind string
		err  error
		want Verdict
	}{
		{"rnic", nil, Pass},
		{"rnic", fail, Fail},
		{"rxe", fail, DeviationSeen},
		{"rxe", nil, Pass},
		{"siw", fmt.Errorf("step 1: %w", ErrNotApplicable), NotApplicable},
		{"siw", fmt.Errorf("setup: %w", &agentproto.Error{Code: agentproto.CodeUnsupported, Message: "no rdma_cm"}), NotApplicable},
		{"siw", fmt.Errorf("step 3: %w", &agentproto.Error{Code: agentproto.CodeVerbs, Message: "EINVAL"}), Fail},
		// A setup that failed, an agent that stopped answering: the rule
		// was never judged, whatever the DUT's known deviations.
		{"rxe", CannotRun(fmt.Errorf("setup: %w", &agentproto.Error{Code: agentproto.CodeVerbs, Message: "EINVAL"})), CouldNotRun},
		{"rnic", fmt.Errorf("step 2: %w", fmt.Errorf("agentproto: poll_cq: %w: %w", agentproto.ErrNoAnswer, errors.New("EOF"))), CouldNotRun},
		{"siw", fmt.Errorf("step 4: %w", CannotRun(errors.New("the DUT's Terminate does not decode"))), CouldNotRun},
	} {
		v, _, ref := judge(agentproto.DeviceInfo{Kind: tc.kind}, c, tc.err)
		if v != tc.want || (v == DeviationSeen) != (ref != "") {
			t.Errorf("%s, %v: %s (ref %q), want %s", tc.kind, tc.err, v, ref, tc.want)
		}
	}
}

func TestCasesSelection(t *testing.T) {
	all := Cases(RoCE, "")
	if len(all) < 25 {
		t.Fatalf("%d RoCEv2 cases, want at least 25", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].ID >= all[i].ID {
			t.Errorf("cases out of order: %s before %s", all[i-1].ID, all[i].ID)
		}
	}
	some := Cases(RoCE, "c9-105, CREDITS")
	for _, c := range some {
		if !strings.Contains(c.ID, "C9-105") && !strings.Contains(c.ID, "credits") {
			t.Errorf("%s selected by c9-105,credits", c.ID)
		}
	}
	if len(some) < 6 {
		t.Errorf("%d cases for c9-105,credits, want the 6 of this file and any others", len(some))
	}
	// 9.7.7.2/credits is a prefix of credits-honoured: = names one.
	if got := Cases(RoCE, "=9.7.7.2/CREDITS"); len(got) != 1 || got[0].ID != "9.7.7.2/credits" {
		t.Errorf("=9.7.7.2/credits selected %d cases, want exactly that one", len(got))
	}
	if n := len(Cases(IWARP, "C9-105")); n != 0 {
		t.Errorf("%d iWARP cases named C9-105", n)
	}
}

func TestRegisterRefuses(t *testing.T) {
	for _, c := range []Case{
		{ID: Cases(RoCE, "")[0].ID, Break: &Break{}}, // a duplicate
		{ID: "X-1"},       // no Break
		{Break: &Break{}}, // no ID
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", c.ID)
				}
			}()
			Register(c)
		}()
	}
}

func TestReportFormats(t *testing.T) {
	rep := &Report{DUT: agentproto.DeviceInfo{Name: "rxe0", Kind: "rxe"}, Results: []Result{}}
	rep.add(Result{ID: "A-1", Section: "§1", Title: "one", Transport: RoCE, Verdict: Pass, Evidence: "#1→x; #2←y"})
	rep.add(Result{ID: "A-2", Section: "§2", Title: "two", Transport: RoCE, Verdict: Fail, Detail: "step 2: wrong", Evidence: "#3→x"})
	rep.add(Result{ID: "A-3", Section: "§3", Title: "three", Transport: RoCE, Verdict: DeviationSeen, Ref: "ref", Detail: "d"})
	rep.add(Result{ID: "A-4", Section: "§4", Title: "four", Transport: RoCE, Verdict: NotApplicable, Detail: "no atomics"})
	rep.add(Result{ID: "A-5", Section: "§5", Title: "five", Transport: RoCE, Verdict: CouldNotRun, Detail: "setup: EINVAL"})
	crashed := Result{ID: "A-6", Section: "§6", Title: "six", Transport: RoCE, Verdict: Pass, Evidence: "#4←z",
		Findings: []Finding{{Cause: "some-cause", Section: "§9", Evidence: "#4← 11 00 03 00"}}}
	crashed.MarkCrashed("kernel BUG at iwcm.c:969!", []string{"kernel BUG at iwcm.c:969!", "Call Trace:"})
	rep.add(crashed)
	if !rep.Failed() || rep.ExitCode() != ExitFail {
		t.Errorf("a report with a FAIL: failed %v, exit %d", rep.Failed(), rep.ExitCode())
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	for _, want := range []string{"6 cases: 1 pass, 1 FAIL, 1 deviation-known, 1 not-applicable, 1 could-not-run, 1 DUT-crashed; 1 root-cause finding(s): some-cause",
		"step 2: wrong [#3→x]", "could-not-run", "DUT-crashed", `the DUT's kernel logged "kernel BUG at iwcm.c:969!" [#4←z]`,
		"the case itself: pass", "(root cause some-cause: #4← 11 00 03 00)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	rep.WriteJSON(&js)
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Summary != rep.Summary || back.Results[2].Ref != "ref" ||
		back.Results[5].Crash == nil || back.Results[5].Crash.Verdict != Pass || len(back.Results[5].Findings) != 1 {
		t.Errorf("JSON round trip: %+v %v", back.Summary, err)
	}
	var ju bytes.Buffer
	rep.WriteJUnit(&ju)
	for _, want := range []string{`tests="6" failures="2" errors="1" skipped="1"`, `<failure message="step 2: wrong" type="FAIL">`,
		`<skipped message="no atomics">`, `<error message="setup: EINVAL" type="could-not-run">`, `type="DUT-crashed"`, "Call Trace:",
		"root cause some-cause (§9)"} {
		if !strings.Contains(ju.String(), want) {
			t.Errorf("JUnit lacks %s:\n%s", want, ju.String())
		}
	}
}

// TestExitCode: FAILs and crashes are exit 1; cases that could not run,
// when none failed, exit 3; all judged and none failed, 0.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		verdicts []Verdict
		want     int
	}{
		{[]Verdict{Pass, DeviationSeen, NotApplicable}, 0},
		{[]Verdict{Pass, CouldNotRun}, ExitIncomplete},
		{[]Verdict{CouldNotRun, Fail}, ExitFail},
		{[]Verdict{Pass, DUTCrashed, CouldNotRun}, ExitFail},
	} {
		rep := &Report{}
		for _, v := range tc.verdicts {
			rep.add(Result{Verdict: v})
		}
		if got := rep.ExitCode(); got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.verdicts, got, tc.want)
		}
	}
}

// TestCouldNotRunSelf: against rnic itself, a case whose setup the DUT
// refuses and a case whose agent has gone are could-not-run, with why.
func TestCouldNotRunSelf(t *testing.T) {
	d, cfg := startSelfTest(t, SelfOptions{})
	refused := Case{ID: "test/setup-refused", Transport: RoCE,
		Setup: Setup{Attr: func(a *QPAttrs) { a.PathMTU = 77 }}, Steps: []Step{QPState(verbs.QPSRTS)}}
	if res := RunCase(cfg, refused, false); res.Verdict != CouldNotRun || !strings.HasPrefix(res.Detail, "setup:") {
		t.Errorf("a refused setup: %s %s, want could-not-run: setup", res.Verdict, res.Detail)
	}
	d.Client.Close()
	c := Cases(RoCE, "")[0]
	if res := RunCase(cfg, c, false); res.Verdict != CouldNotRun || !strings.Contains(res.Detail, "did not answer") {
		t.Errorf("the agent gone: %s %s, want could-not-run: did not answer", res.Verdict, res.Detail)
	}
}

// TestSelfDUTOffersCM: the in-process DUT runs rdma_cm, for the rdma_cm
// cases.
func TestSelfDUTOffersCM(t *testing.T) {
	d, cfg := startSelfTest(t, SelfOptions{})
	if !cfg.Info.CM {
		t.Fatal("device_info says the DUT has no rdma_cm")
	}
	l, err := d.Client.CMListen(0)
	if err != nil || l.Port == 0 {
		t.Fatalf("cm_listen: %+v %v", l, err)
	}
}

// TestTesterAnswersDUT: the machinery for requester cases — the DUT posts
// a SEND, the tester sees it at the DUT's first PSN and answers with a
// crafted ACK (Pkt.Resp, Pkt.AETH); the DUT completes the WR. Without the
// ACK it does not.
func TestTesterAnswersDUT(t *testing.T) {
	_, cfg := startSelfTest(t, SelfOptions{})
	steps := func(answer bool) []Step {
		s := []Step{
			WriteMem{MR: DefaultMR, Data: pattern(24, 9)},
			Post{{ID: 5, Op: verbs.WRSend, Local: []Seg{{MR: DefaultMR, Len: 24}}}},
			Expect{Want: []Check{IsOp(wire.RCSendOnly), DUTPSNIs(0), PayloadIs(pattern(24, 9))}},
		}
		if answer {
			s = append(s, Send{{Op: wire.RCAck, PSN: 0, Resp: true, AETH: &AETH{Syndrome: wire.ACKSyndrome(wire.CreditsUnlimited), MSN: 1}}})
		}
		return append(s, Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is(uint64(5)), Opcode: Is(verbs.WCSend)}}, Within: 300 * time.Millisecond})
	}
	for _, answer := range []bool{true, false} {
		c := Case{ID: "test/answer", Transport: RoCE, Steps: steps(answer), Setup: Setup{Attr: func(a *QPAttrs) { a.Timeout = 20 }}}
		res := RunCase(cfg, c, false)
		if (res.Verdict == Pass) != answer {
			t.Errorf("answered %v: %s %s [%s]", answer, res.Verdict, res.Detail, res.Evidence)
		}
	}
}

// TestSetupBringsUpEveryType: the default setup brings RC, UC and UD QPs
// to RTS (and RC to INIT or RTR when asked, or leaves it in RESET).
func TestSetupBringsUpEveryType(t *testing.T) {
	_, cfg := startSelfTest(t, SelfOptions{})
	for _, tc := range []struct {
		setup Setup
		want  verbs.QPState
	}{
		{Setup{QPType: verbs.QPTypeRC}, verbs.QPSRTS},
		{Setup{QPType: verbs.QPTypeUC}, verbs.QPSRTS},
		{Setup{QPType: verbs.QPTypeUD}, verbs.QPSRTS},
		{Setup{State: verbs.QPSInit}, verbs.QPSInit},
		{Setup{State: verbs.QPSRTR}, verbs.QPSRTR},
		{Setup{Reset: true}, verbs.QPSReset},
	} {
		c := Case{ID: "test/setup", Transport: RoCE, Setup: tc.setup, Steps: []Step{QPState(tc.want)}}
		if res := RunCase(cfg, c, false); res.Verdict != Pass {
			t.Errorf("%+v: %s %s", tc.setup, res.Verdict, res.Detail)
		}
	}
}

// TestRunsStartApart: tester processes started one after another play
// different first QPNs (the rdma_cm cases tell an earlier process's late
// DREQ from their own by it). Three processes, so that a chance equality
// of two of the 4096 starts does not fail it.
func TestRunsStartApart(t *testing.T) {
	if os.Getenv("CONFORM_PRINT_QPN") != "" {
		fmt.Println(newRun(&Config{TesterQPN: 0x111}, &Case{}).TesterQPN)
		return
	}
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestRunsStartApart$")
		cmd.Env = append(os.Environ(), "CONFORM_PRINT_QPN=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("subprocess: %v", err)
		}
		seen[strings.SplitN(string(out), "\n", 2)[0]] = true
		time.Sleep(2 * time.Millisecond)
	}
	if len(seen) == 1 {
		t.Errorf("three tester processes all started at the same QPN: %v", seen)
	}
}

// TestWCFlagsGRHOnlyForUD: the GRH flag is UD's (rxe also sets it on RC
// receives, which the spec leaves alone); on a UD QP it still counts.
func TestWCFlagsGRHOnlyForUD(t *testing.T) {
	wc := agentproto.WC{Status: uint8(verbs.WCSuccess), Flags: uint8(verbs.WCFlagGRH | verbs.WCFlagWithImm)}
	want := WCWant{Status: verbs.WCSuccess, Flags: Is(verbs.WCFlagWithImm)}
	rc := &Run{Case: &Case{}}
	if err := want.match(rc, wc); err != nil {
		t.Errorf("RC: %v", err)
	}
	ud := &Run{Case: &Case{Setup: Setup{QPType: verbs.QPTypeUD}}}
	if err := want.match(ud, wc); err == nil {
		t.Error("UD: GRH|WITH_IMM matched a want of WITH_IMM alone")
	}
}
