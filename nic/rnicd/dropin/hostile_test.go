package dropin

import (
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// hostileMR is the memory corners hostile registers and leaves behind
// (HOSTILE_MR in tests/hostile.c).
const hostileMR = 4 << 20

// TestHostileClient: a client makes every descriptor its library got
// from the daemon blocking, empties or fills it, fills its completion
// channel's fd and never reads it while its armed CQ fires hundreds of
// times, then exits holding an MR (corners hostile). The daemon must not
// wait on any of it: another program's SEND round trips with completion
// events go through meanwhile, the hostile session is reaped (its MR
// unmapped), and SIGTERM still ends the daemon promptly. With descriptors
// shared with the client (eventfds) the mover and the doorbell loop
// blocked an OS thread each, so the session was never reaped and SIGTERM
// did not end the daemon.
func TestHostileClient(t *testing.T) {
	needCorners(t)
	needPrograms(t, "ibv_rc_pingpong")
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
	before := reapedBytes(t, d)

	// Its own failure does not end the test: what the daemon does
	// after it is the point.
	h := runCorner(t, d, nil, "hostile", "rnic0", "rnic1")
	h.wait(time.After(programTimeout))
	if !h.ok() {
		t.Errorf("the hostile client's own WRITEs failed\n%s", h.report())
	}

	port := freeTCPPort(t)
	const iters = 50
	common := []string{"ibv_rc_pingpong", "-p", strconv.Itoa(port), "-g", "0", "-n", strconv.Itoa(iters), "-s", "4096", "--chk", "-e"}
	srv, cli := d.runPair(t, port, append(append([]string{}, common...), "-d", "rnic0"),
		append(append([]string{}, common...), "-d", "rnic1", d.addrs[0]))
	for _, p := range []*proc{srv, cli} {
		checkPingpongOutput(t, p, "4096", iters, false)
	}

	// Reaping runs once the daemon sees the connection close; give it
	// the time a loaded machine may take, polling.
	deadline := time.Now().Add(20 * time.Second)
	got := reapedBytes(t, d) - before
	for got < hostileMR && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		got = reapedBytes(t, d) - before
	}
	if got < hostileMR {
		t.Errorf("the reaper unmapped %d bytes after the hostile client exited, want its %d-byte MR", got, hostileMR)
	}

	d.p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.p.done:
	case <-time.After(15 * time.Second):
		d.p.kill()
		t.Fatalf("rnicd still ran 15 s after SIGTERM\n%s", d.p.report())
	}
}

// reapedBytes reads the daemon's reaped_bytes counter through rnic stat,
// run as the daemon's user (rnic refuses another's socket).
func reapedBytes(t *testing.T, d *daemon) uint64 {
	t.Helper()
	out, err := userCommand([]string{build.rnic, "stat", "--socket", d.socket, "counters"}).CombinedOutput()
	m := regexp.MustCompile(`(?m)^counter rnicd .*\breaped_bytes (\d+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("rnic stat counters: %v, no reaped_bytes\n%s", err, out)
	}
	n, _ := strconv.ParseUint(string(m[1]), 10, 64)
	return n
}
