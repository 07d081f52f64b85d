package main

import (
	"bytes"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rnic/rnic/roce/capcheck"
	"github.com/rnic/rnic/transport/pcap"
)

// TestDemoCaptureCausal runs `rnic demo --pcap` (RoCEv2 over loopback UDP,
// and iWARP over loopback TCP) repeatedly, on an idle machine and with every
// core busy as on a shared CI machine, and checks each capture reads
// causally: timestamps never decrease and no response (ACK, NAK, atomic
// ACK, READ response) precedes its request (roce/capcheck). When the tee
// recorded a sent frame only after the socket took it, 2 of 5 idle runs
// had an ACK ahead of the SEND it acknowledges.
func TestDemoCaptureCausal(t *testing.T) {
	idle, busy := 6, 3
	if testing.Short() {
		idle, busy = 2, 1
	}
	for i := range idle + busy {
		if i == idle {
			stop := contendCPU()
			defer stop()
		}
		demoCaptureCausal(t, i, "roce", "--addr-a", "127.0.0.14", "--addr-b", "127.0.0.15")
		if i == 0 || i == idle {
			demoCaptureCausal(t, i, "iwarp", "--iwarp", "--addr-a", "127.0.0.56", "--addr-b", "127.0.0.57")
		}
	}
}

func demoCaptureCausal(t *testing.T, i int, name string, args ...string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "demo.pcap")
	var out, errOut bytes.Buffer
	if code := run(append([]string{"demo", "--pcap", path}, args...), &out, &errOut); code != 0 {
		t.Fatalf("%s run %d: exit %d\n%s\n%s", name, i, code, out.String(), errOut.String())
	}
	frames, err := pcap.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) < 20 {
		t.Fatalf("%s run %d: only %d frames", name, i, len(frames))
	}
	res := capcheck.Check(frames, 0)
	if name == "roce" && (res.Requests < 10 || res.Responses < 5) {
		t.Fatalf("run %d: the checker saw %d requests and %d responses only", i, res.Requests, res.Responses)
	}
	if v := res.Violations; len(v) > 0 {
		var b strings.Builder
		for _, x := range v {
			b.WriteString("\n  " + x.String())
		}
		t.Errorf("%s run %d: %d of %d frames out of causal order:%s", name, i, len(v), len(frames), b.String())
	}
}

// contendCPU keeps twice as many goroutines as there are cores spinning
// until stop is called.
func contendCPU() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var sink atomic.Int64
	for range 2 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				n := 0
				for i := range 100000 {
					n += i
				}
				sink.Add(int64(n))
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}
