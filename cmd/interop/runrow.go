// Running one row: the server side first (rnic on its TAP, or the real
// tool in the guest), then, once it listens, the client; both exit codes;
// then the checks over the capture rnic wrote of its TAP.

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Runner runs rows.
type Runner struct {
	Lab  *Lab
	Rnic string // the rnic binary
	Out  string // directory for captures and logs
	// Guest are the files the passthrough rows copy into a guest's /lab,
	// by name (verbsRnicFile, testFile, raceTestFile): host paths, or the
	// error that kept one from being built.
	Guest map[string]GuestFile
	// Rnicd and LibDir are rnicd and the drop-in library's directory for
	// the drop-in rows, or DropinErr says why they were not built;
	// SockDir holds rnicd's socket, User runs the programs.
	Rnicd, LibDir, SockDir string
	DropinErr              error
	User                   DropinUser
}

// GuestFile is a file built for the guests, or why it could not be.
type GuestFile struct {
	Path string
	Err  error
}

// Time limits, in seconds. TCG guests are slow (ib_write_bw 64 KiB runs
// at ~14 MB/s), but every row's iteration count is small.
const (
	clientLimit   = 150 // the client's whole run
	serverLinger  = 60  // how long the server may take after the client
	listenLimit   = 20  // the guest server's start
	tapLimit      = 20  // rnic server's TAP appearing
	serverSettle  = time.Second
	fixedSettle   = 2 * time.Second // a guest server without a port to watch (lab/demo.sh's 2 s)
	rnicStopDelay = 5 * time.Second
	// failedClientGrace is how long a guest server may take to notice
	// that its client is gone.
	failedClientGrace = 10
	// vmWaitTimeout is vm.sh wait's exit code for a timeout.
	vmWaitTimeout = 124
)

// slug makes a file name of a row label.
func slug(s string) string { return strings.Trim(unsafeName.ReplaceAllString(s, "-"), "-") }

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// sideRC is one side's exit code and the last thing it said.
type sideRC struct {
	rc   int
	tail string
	note string // on a good exit: what the side did that is not ours to fix
}

// Run runs row and checks its capture.
func (rn *Runner) Run(ctx context.Context, row Row) Result {
	start := time.Now()
	g := Guests[row.Guest]
	base := filepath.Join(rn.Out, slug(row.Label()))
	if row.Tests {
		res := rn.runTests(ctx, row, g, base)
		res.Seconds = time.Since(start).Seconds()
		return res
	}
	if row.Verbs {
		if err := rn.stage(g, verbsRnicFile); err != nil {
			return Result{Row: row, Packets: -1, Retrans: -1, Reason: err.Error(), Seconds: time.Since(start).Seconds()}
		}
	}
	pcap := base + ".pcap"
	if row.RnicFaults {
		// pcapng: rnic's faults note each frame they touched
		// (corrupted, lost) in its records' comments.
		pcap = base + ".pcapng"
	}
	os.Remove(pcap)
	DeleteTAP(g.TAP)
	defer DeleteTAP(g.TAP)
	if row.Fault != nil {
		return rn.runFault(ctx, row, g, base, pcap, start)
	}

	res, why, ran := rn.runSides(ctx, row, g, base, pcap)
	if ran {
		why = append(why, rn.check(ctx, g, pcap, &res)...)
	}
	res.Pass = len(why) == 0
	res.Reason = strings.Join(why, "; ")
	if res.Pass {
		res.Reason = res.note
	}
	res.Seconds = time.Since(start).Seconds()
	return res
}

// runSides runs both sides of a row (and a drop-in row's rnicd) and
// returns what went wrong with them; ran is false when nothing ran (a
// drop-in row's rnicd did not start), so there is no capture to check.
func (rn *Runner) runSides(ctx context.Context, row Row, g *Guest, base, pcap string) (res Result, why []string, ran bool) {
	startSide := func(ctx context.Context) (*proc, error) {
		return rn.startRnic(ctx, row.RnicArgs(pcap), base+".rnic.log")
	}
	var daemon *proc
	if row.Dropin {
		var sock string
		var err error
		if daemon, sock, err = rn.startDaemon(ctx, row, base, pcap); err != nil {
			return Result{Row: row, Packets: -1, Retrans: -1}, []string{err.Error()}, false
		}
		startSide = func(ctx context.Context) (*proc, error) { return rn.startProgram(ctx, row, sock, base+".rnic.log") }
	}
	var rnic, guest sideRC
	if row.Role == RnicServer {
		rnic, guest = rn.rnicServes(ctx, row, g, base, startSide)
	} else {
		rnic, guest = rn.guestServes(ctx, row, g, base, startSide)
	}
	if daemon != nil {
		// Interrupted, it closes its capture and removes its TAP.
		daemon.cmd.Process.Signal(os.Interrupt)
		if d := daemon.wait(rnicStopDelay); d.rc != 0 {
			why = append(why, fmt.Sprintf("rnicd rc=%d: %s", d.rc, d.tail))
		}
	}
	res = Result{Row: row, Packets: -1, Retrans: -1, note: guest.note, rnicSide: rnic, guestSide: guest}
	if rnic.rc != 0 {
		why = append(why, fmt.Sprintf("rnic rc=%d: %s", rnic.rc, rnic.tail))
	}
	if guest.rc != 0 {
		why = append(why, fmt.Sprintf("guest rc=%d: %s", guest.rc, guest.tail))
	}
	return res, why, true
}

// rnicServes: rnic serves on its TAP, the guest's tool connects to it.
func (rn *Runner) rnicServes(ctx context.Context, row Row, g *Guest, base string, start startFunc) (rnic, guest sideRC) {
	ctx, cancel := context.WithTimeout(ctx, (clientLimit+serverLinger)*time.Second)
	defer cancel()
	p, err := start(ctx)
	if err != nil {
		return sideRC{rc: -1, tail: err.Error()}, sideRC{rc: -1, tail: "not started"}
	}
	// Ready when its TAP is on the bridge (it listens right after); a
	// drop-in program, when its side channel listens in the namespace.
	deadline := time.Now().Add(tapLimit * time.Second)
	ready := func() bool { return TAPExists(ctx, g.TAP) }
	switch {
	case row.ReadyLog != "":
		ready = func() bool { return logSays(p.path, row.ReadyLog) }
	case row.Dropin && row.CM:
		// rdma_cm listens in rnicd's NIC (on its QP1, or on its own
		// TCP): nothing the kernel shows; the library's trace says it.
		ready = func() bool { return logSays(p.path, cmTraceListening) }
	case row.Dropin:
		ready = func() bool { return pidListening(p.cmd.Process.Pid, row.ListenPort) }
	}
	for !ready() && time.Now().Before(deadline) && !p.exited() {
		sleepCtx(ctx, 100*time.Millisecond)
	}
	sleepCtx(ctx, serverSettle)
	cmd := row.GuestCommand()
	if p.exited() {
		// Nothing to connect to: the client would only time out.
		writeLog(base+".guest.log", cmd, "not run: rnic (the server) had exited\n", -1)
		return p.wait(0), sideRC{rc: -1, tail: "not run: rnic server exited"}
	}
	out, rc := rn.Lab.Exec(ctx, g, clientLimit+10, fmt.Sprintf("timeout %d %s", clientLimit, cmd))
	writeLog(base+".guest.log", cmd, out, rc)
	guest = sideRC{rc: rc, tail: lastLine(out)}
	rnic = p.wait(serverLinger * time.Second)
	return rnic, guest
}

// guestServes: the guest's tool serves, rnic connects to it.
func (rn *Runner) guestServes(ctx context.Context, row Row, g *Guest, base string, start startFunc) (rnic, guest sideRC) {
	cmd := row.GuestCommand()
	id, err := rn.Lab.Start(ctx, g, fmt.Sprintf("timeout %d %s", clientLimit+serverLinger, cmd))
	if err != nil {
		return sideRC{rc: -1, tail: "not started"}, sideRC{rc: -1, tail: err.Error()}
	}
	switch {
	case row.ListenPort != 0 && rn.Lab.WaitListen(ctx, g, row.ListenPort, listenLimit):
	case row.CMPort != 0 && rn.Lab.WaitCMListen(ctx, g, row.CMPort, listenLimit):
	default:
		sleepCtx(ctx, fixedSettle)
	}
	cctx, cancel := context.WithTimeout(ctx, clientLimit*time.Second)
	defer cancel()
	if p, err := start(cctx); err != nil {
		rnic = sideRC{rc: -1, tail: err.Error()}
	} else {
		rnic = p.wait(clientLimit * time.Second)
	}
	// A server whose client failed may wait for it forever: give it a
	// moment, then stop it, so that it does not hold its port for the
	// next row.
	limit := serverLinger
	if rnic.rc != 0 {
		limit = failedClientGrace
	}
	out, rc := rn.Lab.Wait(ctx, g, id, limit)
	if rc == vmWaitTimeout || ctx.Err() != nil {
		// Also when interrupted: a guest kept with --keep must not keep
		// the server either.
		kctx, cancel := context.WithTimeout(context.Background(), 2*failedClientGrace*time.Second)
		defer cancel()
		rn.Lab.Kill(kctx, g, id)
		out, rc = rn.Lab.Wait(kctx, g, id, failedClientGrace)
	}
	writeLog(base+".guest.log", cmd, out, rc)
	if rnic.rc == 0 && guestRpingExitRace(cmd, rc, out) {
		return rnic, sideRC{rc: 0, tail: lastLine(out), note: "guest rping: " + rpingExitRace + " at exit after every ping (rdma-core 44's own race)"}
	}
	return rnic, sideRC{rc: rc, tail: lastLine(out)}
}

// proc is a running rnic.
type proc struct {
	cmd  *exec.Cmd
	log  *os.File
	path string
	done chan error
}

// startFunc starts rnic's side of a row.
type startFunc func(ctx context.Context) (*proc, error)

// startRnic starts rnic with args, its output to logPath. Cancelling ctx
// interrupts it (SIGINT, so it removes its TAP), then kills it.
func (rn *Runner) startRnic(ctx context.Context, args []string, logPath string) (*proc, error) {
	return startProc(ctx, "rnic", append([]string{rn.Rnic}, args...), nil, logPath)
}

// startProc starts argv (logged as name and the arguments) with env added
// to the environment, its output to logPath. Cancelling ctx interrupts it,
// then kills it.
func startProc(ctx context.Context, name string, argv, env []string, logPath string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "$ %s %s\n", name, strings.Join(argv[1:], " "))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = rnicStopDelay
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, log: f, path: logPath, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// exited reports whether the process has ended (without consuming it).
func (p *proc) exited() bool { return len(p.done) > 0 }

// wait waits up to limit for the process, interrupting it after that,
// and returns its exit code and last line.
func (p *proc) wait(limit time.Duration) sideRC {
	var err error
	select {
	case err = <-p.done:
		return p.finish(err)
	default:
	}
	select {
	case err = <-p.done:
	case <-time.After(limit):
		p.cmd.Process.Signal(os.Interrupt)
		select {
		case err = <-p.done:
		case <-time.After(rnicStopDelay):
			p.cmd.Process.Kill()
			err = <-p.done
		}
		if err == nil {
			err = errors.New("timed out")
		}
	}
	return p.finish(err)
}

// finish records the exit and returns the exit code and last line.
func (p *proc) finish(err error) sideRC {
	rc := exitCode(err)
	fmt.Fprintf(p.log, "[exit %d]\n", rc)
	p.log.Close()
	tail := ""
	if b, rerr := os.ReadFile(p.path); rerr == nil {
		tail = lastLine(strings.TrimSuffix(string(b), fmt.Sprintf("[exit %d]\n", rc)))
	}
	if rc == 0 && err != nil {
		rc = -1
	}
	return sideRC{rc: rc, tail: tail}
}

// check runs the capture checks and fills res's counts; it returns the
// problems found.
func (rn *Runner) check(ctx context.Context, g *Guest, pcap string, res *Result) []string {
	if _, err := os.Stat(pcap); err != nil {
		return []string{"no capture"}
	}
	var why []string
	out, err := exec.CommandContext(ctx, rn.Rnic, "decode", pcap).CombinedOutput()
	os.WriteFile(strings.TrimSuffix(pcap, ".pcap")+".decode.txt", out, 0o644)
	sum, perr := ParseDecodeSummary(string(out))
	switch {
	case perr != nil:
		why = append(why, fmt.Sprintf("rnic decode: %v %v", err, perr))
	default:
		res.Packets = sum.Frames
		if p := sum.Problem(g.IWARP); p != "" {
			why = append(why, "decode: "+p)
		}
	}
	if fs, err := RunOracle(ctx, pcap); err != nil {
		why = append(why, "tshark: "+err.Error())
	} else if len(fs) > 0 {
		why = append(why, fmt.Sprintf("tshark: %d findings, frame %s: %s", len(fs), fs[0].Frame, fs[0].Message))
	}
	if g.IWARP {
		if n, err := CountTCPRetransmissions(ctx, pcap); err == nil {
			res.Retrans = n
		}
	} else if n, err := CountRoCERetransmissionsFile(pcap); err == nil {
		res.Retrans = n
	}
	return why
}

// writeLog saves a guest command's output.
func writeLog(path, cmd, out string, rc int) {
	os.WriteFile(path, []byte(fmt.Sprintf("$ %s\n%s[exit %d]\n", cmd, out, rc)), 0o644)
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// stage copies the built file name into g's /lab.
func (rn *Runner) stage(g *Guest, name string) error {
	f, ok := rn.Guest[name]
	switch {
	case !ok:
		return fmt.Errorf("%s was not built", name)
	case f.Err != nil:
		return fmt.Errorf("%s not built: %v", name, oneLine(f.Err.Error(), 300))
	}
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return err
	}
	// Into a temporary name first: a guest never runs half a binary.
	dst := filepath.Join(rn.Lab.Share(g), name)
	if err := os.WriteFile(dst+".tmp", b, 0o755); err != nil {
		return err
	}
	return os.Rename(dst+".tmp", dst)
}

// runTests runs a Tests row: the test binary in the guest, checked by its
// exit code and by what ran (TestOutput.Problem).
func (rn *Runner) runTests(ctx context.Context, row Row, g *Guest, base string) Result {
	res := Result{Row: row, Packets: -1, Retrans: -1}
	name := testFile
	if row.Role == GuestTestsRace {
		name = raceTestFile
	}
	if err := rn.stage(g, name); err != nil {
		res.Reason = err.Error()
		return res
	}
	cmd := row.GuestCommand()
	out, rc := rn.Lab.Exec(ctx, g, guestTestLimit, cmd)
	writeLog(base+".guest.log", cmd, out, rc)
	to := ParseTestOutput(out)
	var why []string
	if rc != 0 {
		why = append(why, fmt.Sprintf("guest rc=%d: %s", rc, to.FirstFailure(out)))
	}
	if p := to.Problem(g.IWARP); p != "" {
		why = append(why, p)
	}
	res.Pass = len(why) == 0
	if res.Pass {
		res.Reason = fmt.Sprintf("%d passed, %d skipped", to.Passed, to.Skipped)
	} else {
		res.Reason = strings.Join(why, "; ")
	}
	return res
}
