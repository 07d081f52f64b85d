package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

// taskSlices reads se.slice of every thread of pid, as /proc/PID/task/*/sched
// shows it (kernels with EEVDF); nil where the kernel shows none.
func taskSlices(t *testing.T, pid int) []string {
	t.Helper()
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/sched", pid))
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "se.slice") {
				out = append(out, strings.TrimSpace(l[strings.Index(l, ":")+1:]))
			}
		}
	}
	return out
}

// TestDaemonShortSlices: every thread of a running rnicd, those the Go
// runtime made after start included, has the short slice (slice.go),
// where the kernel has custom slices; RNICD_DEFAULT_SLICE=1 leaves them.
func TestDaemonShortSlices(t *testing.T) {
	if !shortSlicesHere() {
		t.Skip("this kernel takes no custom slice (sched_setattr sched_runtime, Linux 6.12)")
	}
	bin := buildRnicd(t)
	sock := filepath.Join(t.TempDir(), "rnicd.sock")
	addr := rnicdtest.LoopbackAddr()
	d := startDaemon(t, bin, []string{"rnic0: udp " + addr.String(), "rnicd: serving rnic0 on " + sock}, "--udp", addr.String(), "--socket", sock)
	a, b := openDev(t, "rnic0@"+sock), openDev(t, "rnic0@"+sock)
	rcWrite(t, a, b, 0, 0) // the daemon's goroutines run, on threads made now
	slices := taskSlices(t, d.cmd.Process.Pid)
	if len(slices) < 2 {
		t.Fatalf("rnicd shows %d threads' slices", len(slices))
	}
	for i, s := range slices {
		if s != fmt.Sprint(daemonSlice) {
			t.Errorf("thread %d of %d: slice %s, want %d", i, len(slices), s, daemonSlice)
		}
	}
	d.stop(t)
}

// shortSlicesHere says whether this kernel takes a custom slice: a thread
// of this test asks for one and reads it back.
func shortSlicesHere() bool {
	tid := os.Getpid()
	if !setSlice(tid) {
		return false
	}
	defer func() { // back to the default for this test process
		slicesOff(tid)
	}()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/sched", tid))
	return err == nil && strings.Contains(string(b), fmt.Sprint(daemonSlice))
}

// TestDaemonIdleCPU: an rnicd with two UDP NICs and connected clients
// that do nothing uses next to no CPU: nothing in it spins while no
// client posts (its loopback, drainers, movers and pollers all park).
func TestDaemonIdleCPU(t *testing.T) {
	bin := buildRnicd(t)
	sock := filepath.Join(t.TempDir(), "rnicd.sock")
	addrs := []string{rnicdtest.LoopbackAddr().String(), rnicdtest.LoopbackAddr().String()}
	d := startDaemon(t, bin, []string{"rnic0: udp " + addrs[0], "rnic1: udp " + addrs[1], "rnicd: serving rnic0, rnic1 on " + sock},
		"--udp", addrs[0], "--device", "name=rnic1,udp="+addrs[1], "--socket", sock)
	a, b := openDev(t, "rnic0@"+sock), openDev(t, "rnic1@"+sock)
	rcWrite(t, a, b, 0, 0)
	time.Sleep(200 * time.Millisecond) // the pollers' windows after the last message close
	before := cpuTicks(t, d.cmd.Process.Pid)
	time.Sleep(2 * time.Second)
	used := cpuTicks(t, d.cmd.Process.Pid) - before
	// Clock ticks of 10 ms: a spinning goroutine would use ~200.
	if used > 5 {
		t.Errorf("an idle rnicd used %d clock ticks of CPU in 2 s", used)
	}
	d.stop(t)
}

// cpuTicks is utime + stime of pid, in clock ticks (/proc/PID/stat).
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	var utime, stime int
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return utime + stime
}
