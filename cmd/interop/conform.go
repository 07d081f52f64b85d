// `make conform-lab` (interop --conform): rnic conform's cases against
// the real Linux rxe and siw. The agent, rnic built with -tags verbs, runs
// in the guest on verbs:rxe0 or verbs:siw0; the tester runs on the host
// inside the lab namespace, so that its control connection to the agent
// and (iWARP) its own kernel TCP come from the bridge's address, and
// (RoCEv2) its frames go through its own TAP on the bridge.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform"
	"github.com/rnic/rnic/cmd/internal/conform/publish"
	"github.com/rnic/rnic/cmd/internal/ladder"
)

// conformTarget is one suite run: a guest, the device the agent opens
// there and the cases' transport.
type conformTarget struct {
	Guest     *Guest
	Device    string
	Transport string
}

// conformTargets are the two runs. Their guests (K1, K2 on
// 10.77.0.31-32, the tester's TAP address 10.77.0.71) are their own, not
// interop's I1..I4, so that both harnesses may share the lab.
var conformTargets = []conformTarget{
	{&Guest{Kind: "rxe", Name: "K1", Addr: "10.77.0.31", Opts: []string{"--rdma", "rxe"}, TAP: "tap-conf1", RnicIP: "10.77.0.71", EthMTU: 1500}, "verbs:rxe0", "roce"},
	{&Guest{Kind: "siw", Name: "K2", Addr: "10.77.0.32", Opts: []string{"--rdma", "siw"}, IWARP: true}, "verbs:siw0", "iwarp"},
}

// Limits of one suite run.
const (
	agentPort = 7471
	// caseLimit bounds one case's tester run (the TCG guests are slow).
	caseLimit = 5 * time.Minute
	// conformSlow scales every wait bound of the tester: the DUT answers
	// through a TCG guest on a shared machine.
	conformSlow = "4"
)

// conformOutcome is what one suite run gave.
type conformOutcome struct {
	Target conformTarget
	Report *conform.Report
	Err    string // why there is no report, or what went wrong beside it
}

// runConformLab builds rnic and its verbs build, boots both guests, runs
// the two suites side by side and prints their tables. It returns 1 if a
// suite could not run or a case FAILed.
func runConformLab(ctx context.Context, f *flags, root string, stdout, stderr io.Writer) int {
	l := &Lab{Dir: *f.lab, Log: stdout}
	var gs []*Guest
	for _, t := range conformTargets {
		gs = append(gs, t.Guest)
	}
	defer func() {
		DeleteTAP(conformTargets[0].Guest.TAP)
		if !*f.keep {
			l.StopBooted()
		}
	}()
	bin, files, err := bootLab(ctx, l, root, []Row{{Pairing: &Pairing{Verbs: true}}}, gs, stdout)
	if bin != "" {
		defer os.RemoveAll(filepath.Dir(bin))
	}
	if err != nil {
		fmt.Fprintf(stderr, "interop: %v\n", err)
		return 1
	}
	rn := &Runner{Lab: l, Rnic: bin, Out: *f.out, Guest: files}
	outs := make([]conformOutcome, len(conformTargets))
	var wg sync.WaitGroup
	for i, t := range conformTargets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = rn.runConform(ctx, t, *f.only)
			fmt.Fprintf(stdout, "conform %s done\n", t.Device)
		}()
	}
	wg.Wait()
	code := conformReport(stdout, *f.out, outs)
	dir := filepath.Join(*f.out, "report")
	if *f.report != "" && *f.only == "" {
		dir = *f.report
	}
	if err := publishConform(dir, *f.out, outs); err != nil {
		fmt.Fprintf(stderr, "interop: the report: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dir, publish.MarkdownFile))
	return code
}

// publishConform writes the runs' report into dir (rnic conform report:
// the ladders drawn from each case's own capture in out) and, when dir
// is not out's, a copy of each run's JSON beside it, which is what the
// report was made from.
func publishConform(dir, out string, outs []conformOutcome) error {
	var runs []publish.Run
	for _, o := range outs {
		if o.Report == nil {
			continue
		}
		base := filepath.Join(out, "conform-"+o.Target.Guest.Kind)
		run, err := publish.LoadRun(base+".json", "")
		if err != nil {
			return err
		}
		runs = append(runs, run)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if b, err := os.ReadFile(base + ".json"); err == nil {
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(base)+".json"), b, 0o644); err != nil {
				return err
			}
		}
	}
	if len(runs) == 0 {
		return errors.New("no run has a report")
	}
	title := "rnic conform: Linux rxe and siw"
	return publish.Write(dir, runs, publish.Options{Title: title, Ladder: conformLadder})
}

// conformLadder draws frames from..to of a case's capture, as rnic ladder
// does.
func conformLadder(capture string, from, to int, title string) ([]byte, error) {
	return ladder.CaptureSVG(capture, ladder.Options{From: from, To: to, Title: title})
}

// runConform runs one suite case by case: the agent in the guest, the
// tester here, and after each case a look at the guest kernel's log. A
// case after which the kernel has BUGged, oopsed or warned FAILs with
// that line, and a guest whose kernel died is booted afresh, so that one
// crash does not spoil the cases after it.
func (rn *Runner) runConform(ctx context.Context, t conformTarget, only string) conformOutcome {
	out := conformOutcome{Target: t}
	ids, err := rn.conformCases(ctx, t, only)
	if err != nil {
		out.Err = err.Error()
		return out
	}
	base := filepath.Join(rn.Out, "conform-"+t.Guest.Kind)
	if err := os.MkdirAll(base, 0o755); err != nil {
		out.Err = err.Error()
		return out
	}
	a := &conformAgent{rn: rn, t: t, log: base + ".agent.log"}
	defer a.stop(ctx)
	var problems []string
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		if err := a.ensure(ctx); err != nil {
			problems = append(problems, err.Error())
			break
		}
		rep, why := rn.runTester(ctx, t, filepath.Join(base, strings.TrimSuffix(conform.CaptureName(id), ".pcap")), "="+id)
		if why != "" {
			problems = append(problems, id+": "+why)
		}
		if oops := a.kernelNews(ctx); oops != "" && rep != nil {
			blameKernel(rep, oops, a.crashLog(ctx, oops))
		}
		if rep != nil {
			fmt.Fprintf(rn.Lab.Log, "%s: %-15s %s\n", t.Device, rep.Results[0].Verdict, id)
		}
		out.Report = mergeReport(out.Report, rep)
	}
	out.Err = strings.Join(problems, "; ")
	return out
}

// conformCases lists the IDs of the target's cases (rnic conform run --list).
func (rn *Runner) conformCases(ctx context.Context, t conformTarget, only string) ([]string, error) {
	args := []string{"conform", "run", "--list", "--transport", t.Transport}
	if only != "" {
		args = append(args, "--only", only)
	}
	b, err := exec.CommandContext(ctx, rn.Rnic, args...).Output()
	if err != nil {
		return nil, fmt.Errorf("rnic %s: %w", strings.Join(args, " "), err)
	}
	var ids []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			ids = append(ids, f[0])
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no %s cases match %q", t.Transport, only)
	}
	return ids, nil
}

// conformAgent is the agent in a target's guest.
type conformAgent struct {
	rn   *Runner
	t    conformTarget
	log  string
	id   string // its vm.sh command id, "" when not running
	news int    // kernel log lines of note seen so far
	dead bool   // the guest's kernel died: boot it again
}

// ensure starts the agent (after booting the guest again if its kernel
// died) unless it runs.
func (a *conformAgent) ensure(ctx context.Context) error {
	g, l := a.t.Guest, a.rn.Lab
	if a.dead {
		fmt.Fprintf(l.Log, "guest %s's kernel died: booting it again\n", g.Name)
		if err := a.reboot(ctx); err != nil {
			return err
		}
	}
	if a.id != "" {
		return nil
	}
	// What the kernel logged before (at boot) is no case's doing.
	lines, _ := a.kernelLines(ctx)
	a.news = len(lines)
	if err := a.rn.stage(g, verbsRnicFile); err != nil {
		return err
	}
	cmd := fmt.Sprintf("%s conform agent -d %s --listen %s:%d --tester %s",
		guestVerbsRnic, a.t.Device, g.Addr, agentPort, labBridgeIP)
	id, err := l.Start(ctx, g, cmd)
	if err != nil {
		return err
	}
	a.id = id
	if !l.WaitListen(ctx, g, agentPort, listenLimit) {
		return fmt.Errorf("the agent (%s) never listened on %s:%d", cmd, g.Addr, agentPort)
	}
	return nil
}

// bootMu keeps two targets from booting at once (Lab records the guests
// it booted).
var bootMu sync.Mutex

// reboot stops the guest and boots it again.
func (a *conformAgent) reboot(ctx context.Context) error {
	bootMu.Lock()
	defer bootMu.Unlock()
	a.stop(ctx)
	l, g := a.rn.Lab, a.t.Guest
	l.vm(ctx, "stop", g.Name)
	a.dead = false
	// Boot records it again: once is enough for the stop at the end.
	l.booted = slices.DeleteFunc(l.booted, func(b *Guest) bool { return b == g })
	return l.Boot(ctx, []*Guest{g})
}

// stop stops the agent and appends what it said to its log.
func (a *conformAgent) stop(ctx context.Context) {
	if a.id == "" {
		return
	}
	g := a.t.Guest
	a.rn.Lab.Kill(ctx, g, a.id)
	out, rc := a.rn.Lab.Wait(ctx, g, a.id, 20)
	if f, err := os.OpenFile(a.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintf(f, "%s[exit %d]\n", out, rc)
		f.Close()
	}
	a.id = ""
}

// kernelBad are the guest kernel's log lines that say it found a bug.
const kernelBad = `kernel BUG|Oops|WARNING:|general protection|BUG:`

// kernelLines are the guest kernel's log lines of note; ok is false if
// the guest does not answer.
func (a *conformAgent) kernelLines(ctx context.Context) (lines []string, ok bool) {
	out, rc := a.rn.Lab.Exec(ctx, a.t.Guest, 20, fmt.Sprintf("dmesg | grep -E '%s'; true", kernelBad))
	if out = strings.TrimSpace(out); out != "" {
		lines = strings.Split(out, "\n")
	}
	return lines, rc == 0
}

// kernelNews returns the first line of note in the guest kernel's log
// that is new since the last call ("" if none); after a BUG or an oops
// the guest is marked for a new boot.
func (a *conformAgent) kernelNews(ctx context.Context) string {
	lines, ok := a.kernelLines(ctx)
	if !ok {
		a.dead = true
		return "the guest stopped answering"
	}
	if len(lines) <= a.news {
		return ""
	}
	first := strings.TrimSpace(lines[a.news])
	a.news = len(lines)
	if !strings.Contains(first, "WARNING:") {
		a.dead = true
	}
	return first
}

// crashLogLines bounds the kernel log kept with a crash: the BUG line,
// the registers and the call trace.
const crashLogLines = 60

// crashLog is the guest kernel's log from line on (dmesg, while the
// guest still answers), or else the tail of its serial console's log.
func (a *conformAgent) crashLog(ctx context.Context, line string) []string {
	quoted := "'" + strings.ReplaceAll(line, "'", `'\''`) + "'"
	out, rc := a.rn.Lab.Exec(ctx, a.t.Guest, 20, fmt.Sprintf("dmesg | grep -F -m1 -A %d -- %s", crashLogLines, quoted))
	if rc != 0 || strings.TrimSpace(out) == "" {
		b, err := os.ReadFile(filepath.Join(labState, a.t.Guest.Name, "console.log"))
		if err != nil {
			return nil
		}
		out = string(b)
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		return lines[max(0, len(lines)-crashLogLines):]
	}
	return strings.Split(strings.TrimRight(out, "\n"), "\n")
}

// blameKernel marks rep's (one) case DUT-crashed for what the guest
// kernel logged during it (line, then the log from there), keeping the
// case's own verdict beside the crash.
func blameKernel(rep *conform.Report, line string, log []string) {
	for i := range rep.Results {
		rep.Results[i].MarkCrashed(line, log)
	}
	rep.Recount()
}

// mergeReport adds rep's results to into (nil: a new report).
func mergeReport(into, rep *conform.Report) *conform.Report {
	if rep == nil {
		return into
	}
	if into == nil {
		into = &conform.Report{DUT: rep.DUT, Date: rep.Date}
	}
	into.Results = append(into.Results, rep.Results...)
	into.Recount()
	return into
}

// testerArgs is the tester's command line: in the lab namespace, on its
// TAP on the bridge (RoCEv2) or on the bridge's address (iWARP: kernel
// TCP), the report as JSON on stdout.
func (rn *Runner) testerArgs(t conformTarget, base, only string) []string {
	g := t.Guest
	args := []string{"netns", "exec", labNetns, rn.Rnic, "conform", "run",
		"--agent", fmt.Sprintf("%s:%d", g.Addr, agentPort), "--transport", t.Transport,
		"--slow", conformSlow, "--pcap", base + ".pcap", "--json", "--only", only}
	if t.Transport == "roce" {
		args = append(args, "--tap", g.TAP, "--ip", g.RnicIP+"/24", "--bridge", labBridge)
	} else {
		args = append(args, "--udp", labBridgeIP)
	}
	return args
}

// runTester runs the tester, keeps its JSON report and decodes it. Its
// exit status 1 with a report is a FAIL among the cases, not an error.
func (rn *Runner) runTester(ctx context.Context, t conformTarget, base, only string) (*conform.Report, string) {
	ctx, cancel := context.WithTimeout(ctx, caseLimit)
	defer cancel()
	args := rn.testerArgs(t, base, only)
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = rnicStopDelay
	var stdout strings.Builder
	stderr, err := os.Create(base + ".tester.log")
	if err != nil {
		return nil, err.Error()
	}
	defer stderr.Close()
	fmt.Fprintf(stderr, "$ ip %s\n", strings.Join(args, " "))
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	runErr := cmd.Run()
	var rep conform.Report
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil || len(rep.Results) == 0 {
		return nil, fmt.Sprintf("tester rc=%d, no report (see %s.tester.log)", exitCode(runErr), base)
	}
	if rc := exitCode(runErr); rc != 0 && rc != rep.ExitCode() {
		return &rep, fmt.Sprintf("tester rc=%d without a FAIL (see %s.tester.log)", rc, base)
	}
	return &rep, ""
}

// conformReport prints each suite's table (also to conform-KIND.txt in
// out) and returns 0 only if both ran and no case FAILed.
func conformReport(stdout io.Writer, out string, outs []conformOutcome) int {
	code := 0
	for _, o := range outs {
		fmt.Fprintf(stdout, "\n== %s (%s) ==\n", o.Target.Device, o.Target.Transport)
		if o.Err != "" {
			fmt.Fprintf(stdout, "conform-lab: %s\n", o.Err)
			code = 1
		}
		if o.Report == nil {
			continue
		}
		o.Report.WriteText(stdout)
		writeReports(o.Report, filepath.Join(out, "conform-"+o.Target.Guest.Kind))
		if o.Report.ExitCode() != 0 {
			code = 1
		}
	}
	fmt.Fprintf(stdout, "captures, reports and logs: %s\n", out)
	return code
}

// writeReports writes rep as BASE.txt, BASE.json and BASE.junit.xml.
func writeReports(rep *conform.Report, base string) {
	for ext, write := range map[string]func(io.Writer) error{
		".txt": rep.WriteText, ".json": rep.WriteJSON, ".junit.xml": rep.WriteJUnit,
	} {
		if f, err := os.Create(base + ext); err == nil {
			write(f)
			f.Close()
		}
	}
}
