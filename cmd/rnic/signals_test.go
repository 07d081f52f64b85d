package main

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitFor waits until p's output holds s, failing t after within.
func (p *proc) waitFor(t *testing.T, s string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(p.out.String(), s) {
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before saying %q:\n%s", p.name, p.err, s, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not say %q within %v:\n%s", p.name, s, within, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exitCode waits for p and returns its exit status.
func (p *proc) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("%s still running %v later:\n%s", p.name, within, p.out.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%s: %v", p.name, p.err)
	}
	return 0
}

// TestSIGINT: a process waiting for its peer says what it waits for, and
// Ctrl-C (a real SIGINT) ends it with status 130 and one line saying so,
// not "context canceled" and status 1.
func TestSIGINT(t *testing.T) {
	for _, c := range []struct {
		name    string
		args    []string
		waiting string // what it says while waiting
	}{
		// An rdma_cm REQ to an address where nothing answers: rdma_cm
		// would retry for 103 s.
		{"rping client", []string{"rping", "-c", "-a", "127.0.22.9", "-I", "127.0.22.8", "-p", "24821", "-C", "1"},
			"rping: waiting for 127.0.22.9:24821 to answer the connection request (rdma_cm sends its REQ up to 16 times"},
		{"pingpong server", []string{"pingpong", "--addr", "127.0.22.7", "-p", "24822", "--rdma-port", "24823"},
			"local address:"},
		{"perf server", []string{"perf", "--serve", "--addr", "127.0.22.6", "-p", "24824", "--rdma-port", "24825"},
			"Waiting for client to connect"},
		{"perf iwarp server", []string{"perf", "--iwarp", "--serve", "--addr", "127.0.22.5", "-p", "24826", "--iwarp-port", "24827"},
			"Waiting for client to connect"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := start(t, c.name, c.args...)
			p.waitFor(t, c.waiting, 20*time.Second)
			if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			code := p.exitCode(t, 20*time.Second)
			out := p.out.String()
			if code != 130 || !strings.HasSuffix(out, ": interrupted by SIGINT\n") || strings.Contains(out, "context canceled") {
				t.Errorf("after SIGINT: exit %d, output:\n%s", code, out)
			}
		})
	}
}

// TestClientWithoutServer: a client whose server is not there gives up
// with an error that says so, as perftest's and rc_pingpong's do,
// instead of waiting until it is killed.
func TestClientWithoutServer(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"perf", []string{"perf", "--addr", "127.0.22.3", "-p", "24828", "--rdma-port", "24829", "127.0.22.4"},
			"rnic perf: connect to 127.0.22.4:24828: dial tcp 127.0.22.3:0->127.0.22.4:24828: connect: connection refused"},
		{"perf iwarp", []string{"perf", "--iwarp", "--addr", "127.0.22.3", "-p", "24828", "127.0.22.4"},
			"rnic perf: connect to 127.0.22.4:24828: dial tcp 127.0.22.3:0->127.0.22.4:24828: connect: connection refused"},
		{"pingpong", []string{"pingpong", "--addr", "127.0.22.3", "-p", "24828", "--rdma-port", "24829", "127.0.22.4"},
			"rnic pingpong: couldn't connect to 127.0.22.4:24828"},
		{"rping iwarp", []string{"rping", "--iwarp", "-c", "-a", "127.0.22.4", "-I", "127.0.22.3", "-p", "24828", "-C", "1"},
			"127.0.22.4:24828"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := start(t, c.name, c.args...)
			code := p.exitCode(t, 20*time.Second)
			if out := p.out.String(); code != 1 || !strings.Contains(out, c.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 1 and %q", code, out, c.want)
			}
		})
	}
}
