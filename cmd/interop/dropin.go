// Drop-in rows (issue 14): rnicd serves one NIC on the row's TAP, and an
// unmodified C program (Debian's ibv_rc_pingpong, ib_write_bw) runs on it
// through the drop-in libibverbs.so.1, started with rnic exec inside the
// lab's namespace so that its side channel (a kernel TCP socket) reaches
// the guest over the bridge.

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// startDaemon starts the row's rnicd and waits for its control socket;
// its output goes to base.rnicd.log.
func (rn *Runner) startDaemon(ctx context.Context, row Row, base, pcap string) (*proc, string, error) {
	if rn.Rnicd == "" || rn.LibDir == "" {
		return nil, "", fmt.Errorf("drop-in row: %v", rn.DropinErr)
	}
	sock := base + ".sock"
	os.Remove(sock)
	p, err := startProc(ctx, "rnicd", append([]string{rn.Rnicd}, row.RnicdArgs(pcap, sock)...), nil, base+".rnicd.log")
	if err != nil {
		return nil, "", err
	}
	deadline := time.Now().Add(tapLimit * time.Second)
	for time.Now().Before(deadline) && !p.exited() && ctx.Err() == nil {
		if _, err := os.Stat(sock); err == nil {
			return p, sock, nil
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	d := p.wait(rnicStopDelay)
	return nil, "", fmt.Errorf("rnicd did not serve %s within %ds (rc=%d: %s)", sock, tapLimit, d.rc, d.tail)
}

// startProgram starts the row's program on rnicd's NIC: rnic exec -S sock
// in the lab's namespace, its output to logPath.
func (rn *Runner) startProgram(ctx context.Context, row Row, sock, logPath string) (*proc, error) {
	argv := append([]string{"ip", "netns", "exec", labNetns, rn.Rnic, "exec", "-S", sock, "--"}, row.ProgramArgs()...)
	return startProc(ctx, "ip", argv, []string{"RNIC_LIBDIR=" + rn.LibDir}, logPath)
}

// NetnsListening reports whether a TCP socket listens on port in the
// lab's namespace.
func NetnsListening(ctx context.Context, port int) bool {
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", labNetns,
		"ss", "-Hltn", fmt.Sprintf("sport = :%d", port)).Output()
	return err == nil && strings.TrimSpace(string(out)) != ""
}

// buildDropin builds, into dir, rnicd and the drop-in library (dir/lib)
// for the drop-in rows: rnicd's path and the library's directory.
func buildDropin(ctx context.Context, root, dir string) (rnicd, lib string, err error) {
	rnicd = filepath.Join(dir, "rnicd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", rnicd, "./cmd/rnicd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("build rnicd: %w: %s", err, lastLine(string(out)))
	}
	lib = filepath.Join(dir, "lib")
	cmd = exec.CommandContext(ctx, "make", "--no-print-directory", "-C", "nic/rnicd/dropin/ibverbs", "OUT="+lib)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("build the drop-in library (needs gcc and libibverbs-dev): %w: %s", err, lastLine(string(out)))
	}
	return rnicd, lib, nil
}
