// Drop-in rows: rnicd serves one NIC on the row's TAP, and an
// unmodified C program (Debian's ibv_rc_pingpong, ib_write_bw) runs on it
// through the drop-in libibverbs.so.1, started with rnic exec inside the
// lab's namespace so that its side channel (a kernel TCP socket) reaches
// the guest over the bridge.

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// startDaemon starts the row's rnicd and waits for its control socket;
// its output goes to base.rnicd.log.
func (rn *Runner) startDaemon(ctx context.Context, row Row, base, pcap string) (*proc, string, error) {
	if rn.Rnicd == "" || rn.LibDir == "" {
		return nil, "", fmt.Errorf("drop-in row: %v", rn.DropinErr)
	}
	sock := filepath.Join(rn.SockDir, "rnicd.sock")
	os.Remove(sock)
	p, err := startProc(ctx, "rnicd", append([]string{rn.Rnicd}, row.RnicdArgs(pcap, sock)...), nil, base+".rnicd.log")
	if err != nil {
		return nil, "", err
	}
	deadline := time.Now().Add(tapLimit * time.Second)
	for time.Now().Before(deadline) && !p.exited() && ctx.Err() == nil {
		if _, err := os.Stat(sock); err == nil {
			// rnicd makes it 0600, its own (root's): the program's.
			if err := os.Chown(sock, rn.User.UID, rn.User.GID); err != nil {
				p.cmd.Process.Signal(os.Interrupt)
				p.wait(rnicStopDelay)
				return nil, "", fmt.Errorf("drop-in row: %w", err)
			}
			return p, sock, nil
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	d := p.wait(rnicStopDelay)
	return nil, "", fmt.Errorf("rnicd did not serve %s within %ds (rc=%d: %s)", sock, tapLimit, d.rc, d.tail)
}

// startProgram starts the row's program on rnicd's NIC: rnic exec -S sock
// in the lab's namespace, as rn.User, its output to logPath.
func (rn *Runner) startProgram(ctx context.Context, row Row, sock, logPath string) (*proc, error) {
	argv := []string{"ip", "netns", "exec", labNetns}
	if rn.User.UID != 0 {
		argv = append(argv, "setpriv", fmt.Sprintf("--reuid=%d", rn.User.UID), fmt.Sprintf("--regid=%d", rn.User.GID),
			"--clear-groups", "--")
	}
	argv = append(argv, rn.Rnic, "exec", "-S", sock, "--")
	env := []string{"RNIC_LIBDIR=" + rn.LibDir}
	if row.CM {
		env = append(env, "RNIC_CM_TRACE=1") // its listen, for rnicServes
	}
	return startProc(ctx, "ip", append(argv, row.ProgramArgs()...), env, logPath)
}

// cmTraceListening is what the drop-in librdmacm prints with
// RNIC_CM_TRACE=1 once rdma_listen succeeded: an rdma_cm server on rnicd's
// NIC listens on no socket the kernel shows.
const cmTraceListening = "rnic rdmacm: listening on port "

// logSays reports whether the log at path contains s.
func logSays(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), s)
}

// DropinUser is who runs the drop-in rows' programs: nobody, so that the
// rows show an unprivileged program on a root rnicd (the TAP needs root);
// root if the system has no nobody.
type DropinUser struct {
	Name     string
	UID, GID int
}

// dropinUser looks nobody up.
func dropinUser() (DropinUser, error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return DropinUser{Name: "root"}, fmt.Errorf("the drop-in programs run as root: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return DropinUser{Name: "root"}, fmt.Errorf("the drop-in programs run as root: nobody's uid %q gid %q", u.Uid, u.Gid)
	}
	return DropinUser{Name: u.Username, UID: uid, GID: gid}, nil
}

// prepareDropin builds rnicd and the library into binDir, lets the user
// run rnic and the library from there, and makes the directory of rnicd's
// socket, the user's own.
func (rn *Runner) prepareDropin(ctx context.Context, root, binDir string, log io.Writer) error {
	var err error
	if rn.User, err = dropinUser(); err != nil {
		fmt.Fprintf(log, "interop: %v\n", err)
	}
	if rn.Rnicd, rn.LibDir, err = buildDropin(ctx, root, binDir); err != nil {
		return err
	}
	// MkdirTemp made binDir 0700.
	if err := os.Chmod(binDir, 0o755); err != nil {
		return err
	}
	if rn.SockDir, err = os.MkdirTemp("", "rnic-interop-sock-"); err != nil {
		return err
	}
	return os.Chown(rn.SockDir, rn.User.UID, rn.User.GID)
}

// pidListening reports whether a TCP socket listens on port in the
// network namespace of process pid: a drop-in program's, in rnic exec's
// view (ip netns exec, setpriv, rnic exec and nsenter all exec, so pid is
// the program's).
func pidListening(pid, port int) bool {
	want := fmt.Sprintf(":%04X ", port)
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) > 3 && fields[3] == "0A" && strings.HasSuffix(fields[1]+" ", want) {
				return true
			}
		}
	}
	return false
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
	// librdmacm.so.1 links to the libibverbs.so.1 built first.
	for _, l := range []struct{ dir, needs string }{
		{"nic/rnicd/dropin/libibverbs", "gcc and libibverbs-dev"},
		{"nic/rnicd/dropin/librdmacm", "gcc and librdmacm-dev"},
	} {
		cmd = exec.CommandContext(ctx, "make", "--no-print-directory", "-C", l.dir, "OUT="+lib)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("build the drop-in library %s (needs %s): %w: %s", l.dir, l.needs, err, lastLine(string(out)))
		}
	}
	return rnicd, lib, nil
}
