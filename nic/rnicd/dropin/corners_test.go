package dropin

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The corner tests (tests/*.c) are built with -Wall -Wextra -Werror and
// AddressSanitizer, linked against the system's libibverbs.so (as any
// program is), and run on the ASan build of the drop-in library.
var corners builtOnce

func needCorners(t *testing.T) string {
	t.Helper()
	needLibrary(t)
	return corners.get(t, func() (string, error) {
		srcs, _ := filepath.Glob(filepath.Join(build.root, "nic/rnicd/dropin/tests/*.c"))
		bin := filepath.Join(build.dir, "corners")
		args := append([]string{"-std=gnu11", "-g", "-O1", "-Wall", "-Wextra", "-Werror",
			"-fsanitize=address", "-fno-omit-frame-pointer", "-o", bin}, srcs...)
		return compile("building the corner tests", bin, true, "gcc", append(args, "-libverbs")...)
	})
}

// asanExit: a report of AddressSanitizer (or LeakSanitizer) ends the
// program with a status of its own, told apart from a failed check.
const asanExit = 86

// asanOptions are the ASAN_OPTIONS of a corner test. LeakSanitizer's
// final scan cannot run in a child forked after ibv_fork_init with
// RDMAV_USE_MADVISE: the heap pages registered before the fork are absent
// there (MADV_DONTFORK, as documented), and the scan faults on them; so
// the fork test runs without the leak check.
func asanOptions(test string) string {
	leaks := "1"
	if test == "fork" {
		leaks = "0"
	}
	return "ASAN_OPTIONS=exitcode=86:abort_on_error=0:detect_leaks=" + leaks
}

// runCorner starts one corner test on d's NICs.
func runCorner(t *testing.T, d *daemon, stdin io.Reader, args ...string) *proc {
	t.Helper()
	bin := needCorners(t)
	env := []string{"RNIC_LIBDIR=" + filepath.Join(build.dir, "lib", "asan"), asanOptions(args[0])}
	return start(t, "corners "+args[0], env, stdin, append([]string{build.rnic, "exec", "-S", d.socket, "--", bin}, args...)...)
}

// finish waits for a corner test and fails with its output unless it
// exited 0.
func finish(t *testing.T, p *proc, extra ...string) {
	t.Helper()
	p.wait(time.After(programTimeout))
	if !p.ok() {
		why := ""
		if p.cmd.ProcessState != nil && p.cmd.ProcessState.ExitCode() == asanExit {
			why = " (AddressSanitizer report)"
		}
		t.Fatalf("corner test failed%s\n%s%s", why, p.report(), strings.Join(extra, ""))
	}
	t.Log(p.report())
}

// TestCorners: the corners on the shared daemon's two NICs.
func TestCorners(t *testing.T) {
	for _, c := range []string{"errors", "channel", "async", "fork", "forkcopy", "mr", "wr", "ud", "cap", "manyqps", "cqchannels", "flowlabel", "udsl", "asyncobj", "verbs", "rereg", "ibta15", "parity", "mw", "mcast"} {
		t.Run(c, func(t *testing.T) {
			needCorners(t)
			d := sharedDaemon(t)
			finish(t, runCorner(t, d, nil, c, "rnic0", "rnic1"), d.p.report())
		})
	}
}

// TestCornersIBTA15IWARP: the iWARP device refuses IBTA 1.5's ATOMIC
// WRITE and FLUSH wherever a program could ask for them.
func TestCornersIBTA15IWARP(t *testing.T) {
	needCorners(t)
	d := sharedDaemonOf(t, nicTCP)
	finish(t, runCorner(t, d, nil, "ibta15", "rnic0"), d.p.report())
}

// TestCornersDaemonKilled: a daemon of its own is killed (SIGKILL) under a
// client holding objects: the client sees DEVICE_FATAL and errors, and
// does not hang.
func TestCornersDaemonKilled(t *testing.T) {
	needCorners(t)
	var cleanups []func()
	t.Cleanup(func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	})
	d, err := startDaemon(func(f func()) { cleanups = append(cleanups, f) }, nicUDP)
	if err != nil {
		t.Fatal(err)
	}
	// An *os.File, so that the child holds the pipe itself (an io.Reader
	// would leave Wait waiting on a copying goroutine).
	stdin, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p := runCorner(t, d, stdin, "killed", "rnic0")
	stdin.Close()
	deadline := time.After(programTimeout)
	for !strings.Contains(p.out.String(), "ready\n") {
		select {
		case <-p.done:
			t.Fatalf("ended before it was ready\n%s", p.report())
		case <-deadline:
			p.kill()
			t.Fatalf("not ready\n%s", p.report())
		case <-time.After(10 * time.Millisecond):
		}
	}
	d.p.cmd.Process.Signal(syscall.SIGKILL)
	<-d.p.done
	io.WriteString(w, "go\n")
	w.Close()
	finish(t, p)
}

// TestCornersNoDaemon: without a daemon the device list is empty and one
// line on stderr says how to start rnicd.
func TestCornersNoDaemon(t *testing.T) {
	needCorners(t)
	d := &daemon{socket: filepath.Join(build.dir, "no-such-dir", "rnicd.sock")}
	if _, err := os.Stat(d.socket); err == nil {
		t.Fatal("the socket exists")
	}
	p := runCorner(t, d, nil, "nodaemon")
	finish(t, p)
	if !strings.Contains(p.out.String(), "rnicd") {
		t.Errorf("no line saying how to start rnicd\n%s", p.report())
	}
}
