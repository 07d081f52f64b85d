// Command interop is `make interop`: rnic in the TAP mode against the real
// Linux rxe (RoCEv2) and siw (iWARP) in the lab's QEMU guests, every tool
// in both roles, each run captured on rnic's TAP and checked.
//
//	go run ./cmd/interop [--only REGEXP] [--smoke] [--keep] [--out DIR] [--lab DIR] [--list]
//	go run ./cmd/interop --conform [--only PATTERN] [--report DIR] [--keep] [--out DIR] [--lab DIR]
//
// It brings the lab image up to date (lab/build-image.sh), brings the
// lab network up (vm.sh net-up), boots the guests the selected rows need
// (reusing ones already running), builds rnic into a temporary directory
// (and, for the passthrough rows, rnic and nic/passthrough's test binaries
// with -tags verbs, which need libibverbs-dev and librdmacm-dev; the
// guests run them, having the host's Debian release; for the drop-in rows,
// rnicd and the drop-in libibverbs.so.1, which need gcc and
// libibverbs-dev, and Debian's ibverbs-utils and perftest on the host,
// whose unmodified programs they run), runs the rows one
// after the other, and prints a table: pairing, role, result (PASS, or
// FAIL and why), packets on rnic's TAP, retransmissions. The fault rows
// (faults.go) run under tc netem in the guest; their verdict may also be
// FINDING, the guest's own failure (verdict.go), and a second table gives
// both sides' accounts of them.
// It exits 1 if any row failed. On exit, also after SIGINT, it stops the
// guests it booted (unless --keep) and removes its TAPs. It must run as
// root (the lab is a network namespace and QEMU guests).
//
// With --conform (make conform-lab) it runs rnic conform instead: the
// agent in an rxe and a siw guest, the RoCEv2 and the iWARP cases against
// them (conform.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// flags are interop's flags.
type flags struct {
	lab, only, out, report     *string
	smoke, keep, list, conform *bool
}

// parseFlags parses args; nil with the exit status when the run ends here.
func parseFlags(args []string, stderr io.Writer) (*flags, int) {
	fs := pflag.NewFlagSet("interop", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &flags{
		lab:     fs.String("lab", "", "the lab directory (default cmd/interop/lab in the repository)"),
		only:    fs.String("only", "", "run only the rows whose \"pairing / role\" matches this regular expression"),
		smoke:   fs.Bool("smoke", false, "the CI subset: rxe rc pingpong and siw rping, both roles; the passthrough tests in both guests; rnic -d verbs:rxe0 pingpong as client; Debian's ibv_rc_pingpong and rping (rxe, siw) on rnicd through the drop-in libraries, both roles"),
		keep:    fs.Bool("keep", false, "leave the guests running (a later run reuses them)"),
		out:     fs.String("out", "", "directory for captures and logs (default: a new temporary directory)"),
		list:    fs.Bool("list", false, "print the selected rows' commands and exit"),
		report:  fs.String("report", "", "--conform: also write the runs' JSON and their report (rnic conform report) into this directory; a run with --only writes them into the output directory only"),
		conform: fs.Bool("conform", false, "make conform-lab instead of the rows: rnic conform's RoCEv2 cases against rxe, its iWARP cases against siw, through the agent in the guest (--only is then the cases' --only)"),
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "interop: unexpected argument %q\n", fs.Arg(0))
		return nil, 2
	}
	return f, 0
}

func run(args []string, stdout, stderr io.Writer) int {
	f, code := parseFlags(args, stderr)
	if f == nil {
		return code
	}
	if *f.conform {
		return runConform(f, stdout, stderr)
	}
	rows, err := Select(Rows(Pairings), *f.only, *f.smoke)
	if err != nil {
		fmt.Fprintf(stderr, "interop: %v\n", err)
		return 2
	}
	if *f.list {
		listRows(stdout, rows)
		return 0
	}
	root, code := labRoot(f, stderr)
	if root == "" {
		return code
	}
	fmt.Fprintf(stdout, "interop: %d rows; captures and logs in %s\n", len(rows), *f.out)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runLab(ctx, f, root, rows, stdout, stderr)
}

// runConform is run for --conform: the lab's guests and the conformance
// suites instead of the rows.
func runConform(f *flags, stdout, stderr io.Writer) int {
	root, code := labRoot(f, stderr)
	if root == "" {
		return code
	}
	fmt.Fprintf(stdout, "conform-lab: captures, reports and logs in %s\n", *f.out)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runConformLab(ctx, f, root, stdout, stderr)
}

// labRoot checks that the lab can run (root) and settles the repository
// root and the lab's directories; "" with the exit status if not.
func labRoot(f *flags, stderr io.Writer) (string, int) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "interop: needs root (the lab's network namespace, TAPs and QEMU guests)")
		return "", 2
	}
	root, err := repoRoot()
	if err == nil {
		err = f.dirs(root)
	}
	if err != nil {
		fmt.Fprintf(stderr, "interop: %v\n", err)
		return "", 2
	}
	return root, 0
}

// listRows prints each row's commands.
func listRows(stdout io.Writer, rows []Row) {
	for _, r := range rows {
		rnic := "rnic " + joinArgs(r.RnicArgs("CAPTURE.pcap"))
		switch {
		case r.Tests:
			rnic = "none"
		case r.Dropin:
			rnic = "rnicd " + joinArgs(r.RnicdArgs("CAPTURE.pcap", "SOCK")) +
				"\n  program: ip netns exec " + labNetns + " rnic exec -S SOCK -- " + joinArgs(r.ProgramArgs())
		}
		fmt.Fprintf(stdout, "%s\n  guest %s: %s\n  rnic: %s\n", r.Label(), Guests[r.Guest].Name, r.GuestCommand(), rnic)
		if r.Fault != nil {
			fmt.Fprintf(stdout, "  guest %s's egress: %s\n", Guests[r.Guest].Name, netemScript(r.Fault))
		}
	}
}

// dirs fills in the default lab directory and makes the output one.
func (f *flags) dirs(root string) error {
	if *f.lab == "" {
		*f.lab = filepath.Join(root, "cmd", "interop", "lab")
	}
	if *f.out == "" {
		var err error
		*f.out, err = os.MkdirTemp("", "rnic-interop-")
		return err
	}
	return os.MkdirAll(*f.out, 0o755)
}

// runLab builds rnic (and what the rows need), boots the guests, runs the
// rows and reports them; the guests stop afterwards unless --keep.
func runLab(ctx context.Context, f *flags, root string, rows []Row, stdout, stderr io.Writer) int {
	l := &Lab{Dir: *f.lab, Log: stdout}
	gs := GuestsOf(rows)
	defer func() {
		for _, g := range gs {
			DeleteTAP(g.TAP)
		}
		if !*f.keep {
			l.StopBooted()
		}
	}()
	bin, guestFiles, err := bootLab(ctx, l, root, rows, gs, stdout)
	if bin != "" {
		defer os.RemoveAll(filepath.Dir(bin))
	}
	if err != nil {
		fmt.Fprintf(stderr, "interop: %v\n", err)
		return 1
	}
	if _, err := exec.LookPath("tshark"); err != nil {
		fmt.Fprintln(stdout, "interop: tshark is not installed: every row fails its oracle check (apt-get install tshark)")
	}
	rn := &Runner{Lab: l, Rnic: bin, Out: *f.out, Guest: guestFiles}
	rn.ClearAllNetem(gs)
	if needDropin(rows) {
		fmt.Fprintln(stdout, "building rnicd and the drop-in libibverbs.so.1")
		if rn.DropinErr = rn.prepareDropin(ctx, root, filepath.Dir(bin), stdout); rn.DropinErr != nil {
			rn.Rnicd = ""
			fmt.Fprintf(stdout, "interop: %v\n", rn.DropinErr)
		}
		if rn.SockDir != "" {
			defer os.RemoveAll(rn.SockDir)
		}
	}
	return report(stdout, *f.out, runRows(ctx, rn, rows, stdout), len(rows))
}

// runRows runs the rows in order until ctx ends, telling each verdict.
func runRows(ctx context.Context, rn *Runner, rows []Row, stdout io.Writer) []Result {
	var results []Result
	for i, r := range rows {
		if ctx.Err() != nil {
			fmt.Fprintln(stdout, "interop: interrupted")
			break
		}
		res := rn.Run(ctx, r)
		verdict := res.Verdict()
		switch {
		case res.Finding != "":
			verdict += ": " + oneLine(res.Finding, 200) + " [" + oneLine(res.Reason, 200) + "]"
		case !res.Pass:
			verdict += ": " + oneLine(res.Reason, 200)
		}
		fmt.Fprintf(stdout, "[%d/%d] %s: %s (%.0fs)\n", i+1, len(rows), r.Label(), verdict, res.Seconds)
		results = append(results, res)
	}
	return results
}

// report writes the results' table (also to RESULTS.txt in out) and
// returns 0 only if all rows ran and passed.
func report(stdout io.Writer, out string, results []Result, rows int) int {
	fmt.Fprintln(stdout)
	WriteTable(stdout, results)
	if f, err := os.Create(filepath.Join(out, "RESULTS.txt")); err == nil {
		WriteTable(f, results)
		f.Close()
	}
	fmt.Fprintf(stdout, "captures and logs: %s\n", out)
	for _, r := range results {
		if r.Failed() {
			return 1
		}
	}
	if len(results) < rows {
		return 1
	}
	return 0
}

// repoRoot is the nearest directory above the working directory with a
// go.mod.
func repoRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("no go.mod above the working directory: run from the repository")
		}
		d = up
	}
}

// bootLab builds rnic and the guests' files for rows, readies the lab and
// boots gs. bin is set (its folder the caller's to remove) once rnic is
// built, even when a later step fails.
func bootLab(ctx context.Context, l *Lab, root string, rows []Row, gs []*Guest, log io.Writer) (bin string, files map[string]GuestFile, err error) {
	if bin, err = buildRnic(ctx, root); err != nil {
		return "", nil, err
	}
	files = buildGuestFiles(ctx, root, filepath.Dir(bin), rows, log)
	if err = l.Prepare(ctx); err == nil {
		err = l.Boot(ctx, gs)
	}
	return bin, files, err
}

// buildRnic builds rnic into a new temporary directory.
func buildRnic(ctx context.Context, root string) (string, error) {
	dir, err := os.MkdirTemp("", "rnic-interop-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "rnic")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/rnic")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("build rnic: %w\n%s", err, out)
	}
	return bin, nil
}

// buildGuestFiles builds, into dir, what the selected passthrough rows
// copy into their guests: rnic with -tags verbs, and nic/passthrough's
// test binaries, plain and -race. A build that fails fails only the rows
// that need it (a host without libibverbs-dev can still run the rest).
func buildGuestFiles(ctx context.Context, root, dir string, rows []Row, log io.Writer) map[string]GuestFile {
	need := map[string]bool{}
	for _, r := range rows {
		switch {
		case r.Verbs:
			need[verbsRnicFile] = true
		case r.Role == GuestTests:
			need[testFile] = true
		case r.Role == GuestTestsRace:
			need[raceTestFile] = true
		}
	}
	builds := []struct {
		name string
		args []string
	}{
		{verbsRnicFile, []string{"build", "-tags", "verbs", "-o", filepath.Join(dir, verbsRnicFile), "./cmd/rnic"}},
		{testFile, []string{"test", "-c", "-tags", "verbs", "-o", filepath.Join(dir, testFile), "./nic/passthrough"}},
		{raceTestFile, []string{"test", "-c", "-race", "-tags", "verbs", "-o", filepath.Join(dir, raceTestFile), "./nic/passthrough"}},
	}
	files := map[string]GuestFile{}
	for _, b := range builds {
		if !need[b.name] {
			continue
		}
		fmt.Fprintf(log, "building %s (go %s)\n", b.name, joinArgs(b.args[:len(b.args)-3]))
		cmd := exec.CommandContext(ctx, "go", b.args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			err = fmt.Errorf("go %s: %w: %s (the verbs build needs libibverbs-dev and librdmacm-dev)", b.args[0], err, lastLine(string(out)))
			fmt.Fprintf(log, "interop: %v\n", err)
			files[b.name] = GuestFile{Err: err}
			continue
		}
		files[b.name] = GuestFile{Path: filepath.Join(dir, b.name)}
	}
	return files
}

// needDropin says whether a row runs a program through the drop-in library.
func needDropin(rows []Row) bool {
	for _, r := range rows {
		if r.Dropin {
			return true
		}
	}
	return false
}

// joinArgs prints a command line.
func joinArgs(a []string) string {
	s := ""
	for i, x := range a {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s
}
