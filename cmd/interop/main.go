// Command interop is `make interop`: rnic in the TAP mode against the real
// Linux rxe (RoCEv2) and siw (iWARP) in the lab's QEMU guests, every tool
// in both roles, each run captured on rnic's TAP and checked.
//
//	go run ./cmd/interop [--only REGEXP] [--smoke] [--keep] [--out DIR] [--lab DIR] [--list]
//
// It builds the lab image if it is missing (lab/build-image.sh), brings the
// lab network up (vm.sh net-up), boots the guests the selected rows need
// (reusing ones already running), builds rnic into a temporary directory,
// runs the rows one after the other, and prints a table: pairing, role,
// result (PASS, or FAIL and why), packets on rnic's TAP, retransmissions.
// It exits 1 if any row failed. On exit, also after SIGINT, it stops the
// guests it booted (unless --keep) and removes its TAPs. It must run as
// root (the lab is a network namespace and QEMU guests).
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

func run(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("interop", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	lab := fs.String("lab", "", "the lab directory (default ../shared/lab from the repository root)")
	only := fs.String("only", "", "run only the rows whose \"pairing / role\" matches this regular expression")
	smoke := fs.Bool("smoke", false, "the CI subset: rxe rc pingpong and siw rping, both roles")
	keep := fs.Bool("keep", false, "leave the guests running (a later run reuses them)")
	out := fs.String("out", "", "directory for captures and logs (default: a new temporary directory)")
	list := fs.Bool("list", false, "print the selected rows' commands and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "interop: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	rows, err := Select(Rows(Pairings), *only, *smoke)
	if err != nil {
		fmt.Fprintf(stderr, "interop: %v\n", err)
		return 2
	}
	if *list {
		for _, r := range rows {
			fmt.Fprintf(stdout, "%s\n  guest %s: %s\n  rnic: rnic %s\n", r.Label(), Guests[r.Guest].Name,
				r.GuestCommand(), joinArgs(r.RnicArgs("CAPTURE.pcap")))
		}
		return 0
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "interop: needs root (the lab's network namespace, TAPs and QEMU guests)")
		return 2
	}
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintf(stderr, "interop: %v\n", err)
		return 2
	}
	if *lab == "" {
		*lab = filepath.Join(root, "..", "shared", "lab")
	}
	if *out == "" {
		if *out, err = os.MkdirTemp("", "rnic-interop-"); err != nil {
			fmt.Fprintf(stderr, "interop: %v\n", err)
			return 2
		}
	} else if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "interop: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "interop: %d rows; captures and logs in %s\n", len(rows), *out)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	l := &Lab{Dir: *lab, Log: stdout}
	gs := GuestsOf(rows)
	defer func() {
		for _, g := range gs {
			DeleteTAP(g.TAP)
		}
		if !*keep {
			l.StopBooted()
		}
	}()

	bin, err := buildRnic(ctx, root)
	if err != nil {
		fmt.Fprintf(stderr, "interop: %v\n", err)
		return 1
	}
	defer os.RemoveAll(filepath.Dir(bin))
	if err := l.Prepare(ctx); err != nil {
		fmt.Fprintf(stderr, "interop: %v\n", err)
		return 1
	}
	if err := l.Boot(ctx, gs); err != nil {
		fmt.Fprintf(stderr, "interop: %v\n", err)
		return 1
	}
	if _, err := exec.LookPath("tshark"); err != nil {
		fmt.Fprintln(stdout, "interop: tshark is not installed: every row fails its oracle check (see reference/wireshark.md §A1)")
	}

	rn := &Runner{Lab: l, Rnic: bin, Out: *out}
	var results []Result
	for i, r := range rows {
		if ctx.Err() != nil {
			fmt.Fprintln(stdout, "interop: interrupted")
			break
		}
		res := rn.Run(ctx, r)
		verdict := "PASS"
		if !res.Pass {
			verdict = "FAIL: " + oneLine(res.Reason, 200)
		}
		fmt.Fprintf(stdout, "[%d/%d] %s: %s (%.0fs)\n", i+1, len(rows), r.Label(), verdict, res.Seconds)
		results = append(results, res)
	}
	fmt.Fprintln(stdout)
	WriteTable(stdout, results)
	if f, err := os.Create(filepath.Join(*out, "RESULTS.txt")); err == nil {
		WriteTable(f, results)
		f.Close()
	}
	fmt.Fprintf(stdout, "captures and logs: %s\n", *out)
	for _, r := range results {
		if !r.Pass {
			return 1
		}
	}
	if len(results) < len(rows) {
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
