package perf

import (
	"bytes"
	"net/netip"
	"os/exec"
	"runtime"
	"testing"
)

// Runs that must pass on a busy machine, as on a shared CI runner: every
// CPU is kept busy by a shell busy loop while they run.

// contendCPU starts one busy loop per CPU, each a process of its own (other
// work on the machine, scheduled by the kernel against this test), and
// kills them, by PID, when the test ends.
func contendCPU(t *testing.T) {
	t.Helper()
	for range runtime.NumCPU() {
		cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start a busy loop: %v", err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
}

// checkContended checks that a run moved ops operations, data intact.
func checkContended(t *testing.T, res *Result, ops int) {
	t.Helper()
	if !res.Check.OK() || res.Check.Bytes == 0 {
		t.Errorf("data check: %+v", res.Check)
	}
	if b := res.BW; b == nil || b.Ops != int64(ops) || b.AvgMBps <= 0 {
		t.Errorf("bandwidth figures %+v, want %d operations", b, ops)
	}
}

// The default UD SEND bandwidth run (1024-byte messages, 5000 of them)
// passes with the CPU contended. Before, the server kept 512 receives
// posted and re-posted them as it polled; whenever it fell behind the
// client, datagrams found no receive WQE and were dropped (rcv_no_buf,
// 300-700 a run), and the server waited for them until "no progress".
// Now every receive of the run is posted up front, as perftest does for UD.
func TestUDSendBWContended(t *testing.T) {
	contendCPU(t)
	var out bytes.Buffer
	cfg := Config{Op: OpSend, UD: true, Size: 1024, NoRaw: true, Out: &out,
		ServerAddr: netip.MustParseAddr("127.0.0.58"), Addr: netip.MustParseAddr("127.0.0.59")}
	res, err := Run(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	checkContended(t, res, DefaultItersBW)
}

// A large RDMA READ, one message, passes with the CPU contended, over
// RoCEv2 (embedded mode, loopback UDP) and over iWARP. Before, a stall of
// the streaming responder or a lost response made the requester ask again
// while the rest of the stream was still coming; each local ACK timeout
// behind that stream asked for yet another whole replay, until
// RETRY_EXC_ERR.
func TestLargeReadContended(t *testing.T) {
	for _, iwarp := range []bool{false, true} {
		name := "roce"
		if iwarp {
			name = "iwarp"
		}
		t.Run(name, func(t *testing.T) {
			contendCPU(t)
			size := 64 << 20
			if raceEnabled {
				size = 16 << 20 // seconds under the race detector too
			}
			var out bytes.Buffer
			cfg := Config{Op: OpRead, Size: size, Iters: 1, NoRaw: true, IWARP: iwarp, Out: &out,
				ServerAddr: netip.MustParseAddr("127.0.0.60"), Addr: netip.MustParseAddr("127.0.0.61")}
			res, err := Run(testCtx(t), cfg)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			checkContended(t, res, 1)
		})
	}
}
