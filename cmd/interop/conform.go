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
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rnic/rnic/nic/tools/conform"
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
	// conformLimit bounds the whole suite (the TCG guests are slow).
	conformLimit = 1800
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
	bin, err := buildRnic(ctx, root)
	if err != nil {
		fmt.Fprintf(stderr, "interop: %v\n", err)
		return 1
	}
	defer os.RemoveAll(filepath.Dir(bin))
	files := buildGuestFiles(ctx, root, filepath.Dir(bin), []Row{{Pairing: &Pairing{Verbs: true}}}, stdout)
	if err = l.Prepare(ctx); err == nil {
		err = l.Boot(ctx, gs)
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
	return conformReport(stdout, *f.out, outs)
}

// runConform runs one suite: the agent in the guest, the tester here.
func (rn *Runner) runConform(ctx context.Context, t conformTarget, only string) conformOutcome {
	out := conformOutcome{Target: t}
	g := t.Guest
	if err := rn.stage(g, verbsRnicFile); err != nil {
		out.Err = err.Error()
		return out
	}
	base := filepath.Join(rn.Out, "conform-"+g.Kind)
	agent := fmt.Sprintf("%s conform agent -d %s --listen %s:%d --tester %s",
		guestVerbsRnic, t.Device, g.Addr, agentPort, labBridgeIP)
	id, err := rn.Lab.Start(ctx, g, agent)
	if err != nil {
		out.Err = err.Error()
		return out
	}
	defer func() {
		rn.Lab.Kill(ctx, g, id)
		log, rc := rn.Lab.Wait(ctx, g, id, 20)
		writeLog(base+".agent.log", agent, log, rc)
	}()
	if !rn.Lab.WaitListen(ctx, g, agentPort, listenLimit) {
		out.Err = fmt.Sprintf("the agent (%s) never listened on %s:%d", agent, g.Addr, agentPort)
		return out
	}
	out.Report, out.Err = rn.runTester(ctx, t, base, only)
	return out
}

// testerArgs is the tester's command line: in the lab namespace, on its
// TAP on the bridge (RoCEv2) or on the bridge's address (iWARP: kernel
// TCP), the report as JSON on stdout and JUnit beside it.
func (rn *Runner) testerArgs(t conformTarget, base, only string) []string {
	g := t.Guest
	args := []string{"netns", "exec", labNetns, rn.Rnic, "conform", "run",
		"--agent", fmt.Sprintf("%s:%d", g.Addr, agentPort), "--transport", t.Transport,
		"--slow", conformSlow, "--pcap", base + ".pcap", "--junit", base + ".junit.xml", "--json"}
	if t.Transport == "roce" {
		args = append(args, "--tap", g.TAP, "--ip", g.RnicIP+"/24", "--bridge", labBridge)
	} else {
		args = append(args, "--udp", labBridgeIP)
	}
	if only != "" {
		args = append(args, "--only", only)
	}
	return args
}

// runTester runs the tester, keeps its JSON report and decodes it. Its
// exit status 1 with a report is a FAIL among the cases, not an error.
func (rn *Runner) runTester(ctx context.Context, t conformTarget, base, only string) (*conform.Report, string) {
	ctx, cancel := context.WithTimeout(ctx, conformLimit*1e9)
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
	os.WriteFile(base+".json", []byte(stdout.String()), 0o644)
	var rep conform.Report
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil || len(rep.Results) == 0 {
		return nil, fmt.Sprintf("tester rc=%d, no report (see %s.tester.log)", exitCode(runErr), base)
	}
	if rc := exitCode(runErr); rc != 0 && !rep.Failed() {
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
		if f, err := os.Create(filepath.Join(out, "conform-"+o.Target.Guest.Kind+".txt")); err == nil {
			o.Report.WriteText(f)
			f.Close()
		}
		if o.Report.Failed() {
			code = 1
		}
	}
	fmt.Fprintf(stdout, "captures, reports and logs: %s\n", out)
	return code
}
