package main

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// twoProcessRows: a server and a client process, first each with its own
// embedded NIC (against raw UDP between the two processes), then both on
// NICs that one rnicd serves (against the embedded figures).
func (b *bench) twoProcessRows() []row {
	lat := []string{"write_lat", "-s", "8", "-n", strconv.Itoa(300 * b.iters)}
	bw := []string{"write_bw", "-s", "65536", "-n", strconv.Itoa(100 * b.iters)}
	eLat, eLatErr := b.twoProcesses(lat, nil)
	eBW, eBWErr := b.twoProcesses(bw, nil)
	rows := []row{
		perfRow("two processes, embedded: WRITE lat 8 B", eLat, eLatErr, "UDP across processes"),
		perfRow("two processes, embedded: WRITE bw 64 KiB", eBW, eBWErr, "UDP across processes"),
	}
	stop, sock, err := b.startRnicd()
	if err != nil {
		return append(rows, row{workload: "two processes through rnicd", err: err})
	}
	defer stop()
	dLat, dLatErr := b.twoProcesses(lat, []string{"rnic0@" + sock, "rnic1@" + sock})
	dBW, dBWErr := b.twoProcesses(bw, []string{"rnic0@" + sock, "rnic1@" + sock})
	return append(rows,
		againstEmbedded("two processes through rnicd: WRITE lat 8 B", dLat, dLatErr, eLat, eLatErr),
		againstEmbedded("two processes through rnicd: WRITE bw 64 KiB", dBW, dBWErr, eBW, eBWErr))
}

// twoProcesses runs test in a server and a client process; devs, if set,
// are the server's and the client's -d.
func (b *bench) twoProcesses(test []string, devs []string) (*perfResult, error) {
	srv := []string{"perf", "--serve", "-p", sidePort}
	cli := append([]string{"perf"}, test...)
	cli = append(cli, "-p", sidePort, "--json")
	if devs == nil {
		srv = append(srv, "--addr", "127.0.0.2", "--rdma-port", rdmaPort)
		cli = append(cli, "--addr", "127.0.0.3", "--rdma-port", rdmaPort)
	} else {
		srv = append(srv, "-d", devs[0])
		cli = append(cli, "-d", devs[1])
	}
	server := exec.Command(b.rnic(), srv...)
	wait, err := startUntil(server, "Waiting for client", true)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	res, err := b.perf(append(cli, "127.0.0.2"))
	if err != nil {
		server.Process.Kill()
	}
	wait()
	return res, err
}

// startRnicd starts a daemon with two UDP NICs on loopback and returns
// how to stop it and its socket.
func (b *bench) startRnicd() (stop func(), sock string, err error) {
	sock = filepath.Join(b.tmp, "rnicd.sock")
	d := exec.Command(b.rnicd(), "--udp", "127.0.0.2:"+rdmaPort, "--mtu", "9000",
		"--device", "name=rnic1,udp=127.0.0.3:"+rdmaPort+",mtu=9000", "--socket", sock)
	wait, err := startUntil(d, "rnicd: serving", true)
	if err != nil {
		return nil, "", fmt.Errorf("rnicd: %w", err)
	}
	return func() { d.Process.Kill(); wait() }, sock, nil
}

// startUntil starts cmd and returns once a line of its stdout (or stderr)
// contains ready; wait then reaps it.
func startUntil(cmd *exec.Cmd, ready string, stdout bool) (wait func(), err error) {
	var pipe io.ReadCloser
	if stdout {
		pipe, err = cmd.StdoutPipe()
	} else {
		pipe, err = cmd.StderrPipe()
	}
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found, done := make(chan bool, 1), make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pipe)
		ok := false
		for sc.Scan() {
			if !ok && strings.Contains(sc.Text(), ready) {
				ok = true
				found <- true
			}
		}
		if !ok {
			found <- false
		}
	}()
	// Reap only once the output is read to its end (os/exec's rule).
	wait = func() { <-done; cmd.Wait() }
	select {
	case ok := <-found:
		if ok {
			return wait, nil
		}
	case <-time.After(20 * time.Second):
	}
	cmd.Process.Kill()
	wait()
	return nil, fmt.Errorf("%s: no %q", cmd.Path, ready)
}

// againstEmbedded puts a daemon figure against the embedded one.
func againstEmbedded(name string, d *perfResult, dErr error, e *perfResult, eErr error) row {
	r := row{workload: name, err: dErr}
	if r.err == nil {
		r.err = eErr
	}
	if r.err != nil {
		return r
	}
	switch {
	case d.BW != nil && e.BW != nil:
		r.rnic = fmt.Sprintf("%.0f MB/s", d.BW.AvgMBps)
		r.baseline = fmt.Sprintf("embedded %.0f MB/s", e.BW.AvgMBps)
		r.ratio, r.better = d.BW.AvgMBps/e.BW.AvgMBps, "higher is better"
	case d.Lat != nil && e.Lat != nil:
		r.rnic = fmt.Sprintf("%.1f µs", d.Lat.Typical)
		r.baseline = fmt.Sprintf("embedded %.1f µs", e.Lat.Typical)
		r.ratio, r.better = d.Lat.Typical/e.Lat.Typical, "lower is better"
	default:
		r.err = fmt.Errorf("no figure in the output")
	}
	return r
}
