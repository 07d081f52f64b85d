package main

// The TAP rows: rnic perf over two TAP-mode NICs on a
// bridge in a namespace the bench creates, against raw frames through
// TAPs on the same bridge and against kernel TCP between two namespaces
// on that bridge (veth), each figure the median of tapReps runs. Beside
// each bandwidth is the CPU time (user and system, of every process the run
// started) per MiB moved: on a busy machine the rate follows the load, the
// CPU per MiB much less, and it is what bounds a TAP NIC.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// tapReps is how many times each TAP figure is measured; the table shows
// the median (the machine is shared and busy).
const tapReps = 3

// Frame sizes of the baselines: one Ethernet frame of the NIC's traffic at
// TAP MTU 1500 (path MTU 1024 for RoCEv2, MSS 1460 for iWARP's TCP) and of
// an 8-byte WRITE (RoCEv2: Eth+IP+UDP+BTH+RETH+8+ICRC; iWARP: Eth+IP+TCP+
// MPA+DDP/RDMAP+8+CRC).
const (
	roceBWFrame  = 14 + 20 + 8 + 12 + 1024 + 4
	iwarpBWFrame = 1514
	roceLatFrame = 14 + 20 + 8 + 12 + 16 + 8 + 4
	iwarpLatFram = 14 + 20 + 20 + 2 + 14 + 8 + 4
)

// tapNet is the bench's namespace: a bridge with two TAP names for the
// NICs, two for the raw frames, and two namespaces on veths for TCP.
type tapNet struct {
	ns, nsA, nsB string
	tapraw       string // the baseline program
}

// tapRows measures the TAP rows, or says in one row why it cannot.
func (b *bench) tapRows() []row {
	if reason := tapUnavailable(); reason != "" {
		return []row{{workload: "TAP mode rows", skip: reason}}
	}
	n, err := b.newTapNet()
	if n != nil {
		defer n.close()
		defer n.closeOnSignal()()
	}
	if err != nil {
		return []row{{workload: "TAP mode rows", err: err}}
	}
	writes := 100 * b.iters // 64 KiB WRITEs (and TCP messages) per bw run
	lat := 300 * b.iters
	frames := 5000 * b.iters
	roceBW := b.tapPerf(n, "bw", writes, "write_bw", "-s", "65536")
	iwarpBW := b.tapPerf(n, "bw", writes, "write_bw", "--iwarp", "-s", "65536")
	iwarpNoTSO := b.tapPerf(n, "bw", writes, "write_bw", "--iwarp", "-s", "65536", "--tap-offload=false")
	iwarpJumbo := b.tapPerf(n, "bw", writes, "write_bw", "--iwarp", "-s", "65536", "--tap-mtu", "9000")
	roceLat := b.tapPerf(n, "lat", lat, "write_lat", "-s", "8")
	iwarpLat := b.tapPerf(n, "lat", lat, "write_lat", "--iwarp", "-s", "8")
	return []row{
		tapRow("RoCEv2 over TAP WRITE bw 64 KiB (MTU 1024)", roceBW, n.frames(roceBWFrame, frames, "bw"), "raw frames"),
		tapRow("iWARP over TAP WRITE bw 64 KiB (TAP MTU 1500)", iwarpBW, n.frames(iwarpBWFrame, frames, "bw"), "raw frames"),
		tapRow("iWARP over TAP WRITE bw 64 KiB (TAP MTU 1500)", iwarpBW, n.tcp(65536, writes, "bw"), "kernel TCP, veth"),
		tapRow("iWARP over TAP WRITE bw 64 KiB (TAP MTU 1500, no offload)", iwarpNoTSO, n.frames(iwarpBWFrame, frames, "bw"), "raw frames"),
		tapRow("iWARP over TAP WRITE bw 64 KiB (TAP MTU 9000)", iwarpJumbo, n.frames(9014, frames, "bw"), "raw frames"),
		tapRow("RoCEv2 over TAP WRITE lat 8 B", roceLat, n.frames(roceLatFrame, lat, "lat"), "raw frames"),
		tapRow("iWARP over TAP WRITE lat 8 B", iwarpLat, n.frames(iwarpLatFram, lat, "lat"), "raw frames"),
		tapRow("iWARP over TAP WRITE lat 8 B", iwarpLat, n.tcp(8, lat, "lat"), "kernel TCP, veth"),
	}
}

// tapUnavailable is why the TAP rows cannot run here, or "".
func tapUnavailable() string {
	if os.Geteuid() != 0 {
		return "TAP mode needs root"
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return "no /dev/net/tun"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "no ip command (iproute2)"
	}
	return ""
}

// figure is a median over tapReps runs, or why there is none: the rate or
// latency, and the CPU time per MiB moved.
type figure struct {
	f         float64
	cpuPerMiB time.Duration
	label     string
	err       error
}

// median runs measure(count) tapReps times and keeps the median figure.
// The CPU per MiB is marginal, free of the setup every run pays (TAPs,
// NICs, connections): each time a run of a tenth of count is measured too,
// and the difference in CPU time is divided by the difference in bytes
// (unit bytes per count); the median of those is kept.
func median(count, unit int, measure func(count int) (float64, time.Duration, error)) figure {
	var vs []float64
	var cpus []time.Duration
	small := max(count/10, 1)
	for range tapReps {
		v, cpu, err := measure(count)
		if err != nil {
			return figure{err: err}
		}
		_, cpuSmall, err := measure(small)
		if err != nil {
			return figure{err: err}
		}
		vs = append(vs, v)
		if count > small {
			cpus = append(cpus, max(cpu-cpuSmall, 0)*(1<<20)/time.Duration((count-small)*unit))
		}
	}
	slices.Sort(vs)
	f := figure{f: vs[len(vs)/2]}
	if len(cpus) > 0 {
		slices.Sort(cpus)
		f.cpuPerMiB = cpus[len(cpus)/2]
	}
	return f
}

// tapPerf runs rnic perf on two TAP NICs (the server's, the client's),
// iters operations.
func (b *bench) tapPerf(n *tapNet, kind string, iters int, args ...string) figure {
	args = append([]string{"perf"}, args...)
	args = append(args, "--netns", n.ns, "--bridge", "br0", "--tap", "rbt0", "--tap", "rbt1",
		"--ip", "10.77.0.1/24", "--ip", "10.77.0.2/24", "--json")
	f := median(iters, 65536, func(count int) (float64, time.Duration, error) {
		res, cpu, err := b.perfCPU(append(args, "-n", strconv.Itoa(count)))
		switch {
		case err != nil:
			return 0, 0, err
		case kind == "bw" && res.BW != nil:
			return res.BW.AvgMBps, cpu, nil
		case kind == "lat" && res.Lat != nil:
			return res.Lat.Typical, cpu, nil
		}
		return 0, 0, errors.New("no figure in rnic perf's output")
	})
	f.label = kind
	return f
}

// tapRow puts an rnic figure against a baseline.
func tapRow(name string, rnic, base figure, baseName string) row {
	r := row{workload: name, err: errors.Join(rnic.err, base.err)}
	if r.err != nil {
		return r
	}
	if base.label == "bw" {
		r.rnic = fmt.Sprintf("%.0f MB/s, %s CPU/MiB", rnic.f, rnic.cpuPerMiB.Round(100*time.Microsecond))
		r.baseline = fmt.Sprintf("%s %.0f MB/s, %s CPU/MiB", baseName, base.f, base.cpuPerMiB.Round(100*time.Microsecond))
		r.ratio, r.better = rnic.f/base.f, "higher is better"
	} else {
		r.rnic = fmt.Sprintf("%.1f µs", rnic.f)
		r.baseline = fmt.Sprintf("%s %.1f µs", baseName, base.f)
		r.ratio, r.better = rnic.f/base.f, "lower is better"
	}
	return r
}

// frames measures raw frames of size bytes between two TAPs on the bridge.
func (n *tapNet) frames(size, count int, mode string) figure {
	f := median(count, size, func(count int) (float64, time.Duration, error) {
		return n.run(nil, "frames", "-netns", n.ns, "-bridge", "br0", "-tap", "rbr0", "-tap", "rbr1",
			"-size", strconv.Itoa(size), "-count", strconv.Itoa(count), "-mode", mode)
	})
	f.label = mode
	return f
}

// tcp measures kernel TCP from nsB to nsA, messages of size bytes.
func (n *tapNet) tcp(size, count int, mode string) figure {
	f := median(count, size, func(count int) (float64, time.Duration, error) {
		srv := exec.Command("ip", "netns", "exec", n.nsA, n.tapraw, "tcp-serve", "-addr", "10.78.0.1:5999")
		var srvErr bytes.Buffer
		srv.Stderr = &srvErr
		if err := srv.Start(); err != nil {
			return 0, 0, err
		}
		v, cpu, err := n.run([]string{"ip", "netns", "exec", n.nsB}, "tcp-client", "-addr", "10.78.0.1:5999",
			"-size", strconv.Itoa(size), "-count", strconv.Itoa(count), "-mode", mode)
		// The server ends once its one client is done.
		if werr := srv.Wait(); werr != nil && err == nil {
			err = fmt.Errorf("tapraw tcp-serve: %v: %s", werr, lastLine(srvErr.String()))
		}
		return v, cpu + srv.ProcessState.UserTime() + srv.ProcessState.SystemTime(), err
	})
	f.label = mode
	return f
}

// run runs tapraw (behind prefix, a command that runs it elsewhere) and
// returns its figure and the CPU time it took.
func (n *tapNet) run(prefix []string, args ...string) (float64, time.Duration, error) {
	argv := append(append(prefix, n.tapraw), args...)
	var out, errOut bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("tapraw %s: %v: %s", args[0], err, lastLine(errOut.String()))
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	var res struct {
		MBps    float64 `json:"mbps"`
		Typical float64 `json:"t_typical_usec"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return 0, 0, fmt.Errorf("tapraw output: %w", err)
	}
	return res.MBps + res.Typical, cpu, nil // one of them is set
}

// newTapNet builds the namespaces and the baseline program. It returns
// what it built so far with its error, for close.
func (b *bench) newTapNet() (*tapNet, error) {
	p := fmt.Sprintf("rnicbench%d", os.Getpid())
	n := &tapNet{ns: p, tapraw: filepath.Join(b.tmp, "tapraw")}
	if out, err := exec.Command(goTool(), "build", "-o", n.tapraw, "./cmd/internal/tapraw").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building tapraw: %v: %s", err, lastLine(string(out)))
	}
	steps := [][]string{
		{"netns", "add", n.ns},
		{"-n", n.ns, "link", "set", "lo", "up"},
		{"-n", n.ns, "link", "add", "br0", "type", "bridge"},
		{"-n", n.ns, "link", "set", "br0", "up"},
	}
	for i, side := range []string{"a", "b"} {
		ns := p + side
		addr := fmt.Sprintf("10.78.0.%d/24", i+1)
		port := "v" + side
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"-n", n.ns, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"-n", n.ns, "link", "set", port, "master", "br0", "up"},
			[]string{"-n", ns, "addr", "add", addr, "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"})
	}
	n.nsA, n.nsB = p+"a", p+"b"
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			return n, fmt.Errorf("ip %v: %v: %s", s, err, bytes.TrimSpace(out))
		}
	}
	return n, nil
}

// closeOnSignal deletes the namespaces when an interrupt ends the bench
// midway (the children get it too); it returns the function that stops
// watching.
func (n *tapNet) closeOnSignal() (stop func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
			n.close()
			os.Exit(130)
		case <-done:
		}
	}()
	return func() { signal.Stop(sig); close(done) }
}

// close deletes the namespaces (and with them the bridge and veths).
func (n *tapNet) close() {
	for _, ns := range []string{n.nsB, n.nsA, n.ns} {
		if ns != "" {
			exec.Command("ip", "netns", "del", ns).Run()
		}
	}
}
