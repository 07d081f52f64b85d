package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

var (
	bwRow    = regexp.MustCompile(`(?m)^ 4096 +100 +\d+\.\d\d +\d+\.\d\d *\t\t   \d+\.\d{6}\s*$`)
	latRow   = regexp.MustCompile(`(?m)^ 8 +100 +(\d+\.\d\d\s+){6}\d+\.\d\d\s*$`)
	rawBW    = regexp.MustCompile(`(?m)^raw udp: \d+\.\d\d MB/sec, rnic/raw = \d+\.\d\d .*\n\z`)
	rawLat   = regexp.MustCompile(`(?m)^raw udp: t_typical \d+\.\d\d usec, rnic/raw = \d+\.\d\d .*\n\z`)
	perfBase = []string{"perf", "--rdma-port", cmdTestRDMAPort, "--iters", "100"}
)

func TestPerfCommand(t *testing.T) {
	for _, c := range []struct {
		args     []string
		row, raw *regexp.Regexp
	}{
		{[]string{"--op", "write", "--size", "4096", "--mtu", "1024"}, bwRow, rawBW},
		{[]string{"--op", "read", "--mode", "lat", "--size", "8"}, latRow, rawLat},
		{[]string{"--op", "atomic", "--mode", "lat", "-A", "cmp_and_swap"}, latRow, rawLat},
	} {
		out, errOut, code := rnic(t, append(append([]string{}, perfBase...), c.args...)...)
		if code != 0 || !c.row.MatchString(out) || !c.raw.MatchString(out) {
			t.Errorf("%q: exit %d\n%s%s", c.args, code, out, errOut)
		}
	}
}

func TestPerfCommandJSON(t *testing.T) {
	out, errOut, code := rnic(t, append(append([]string{}, perfBase...), "--op", "send", "--size", "1000", "--qps", "2", "--json")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var res struct {
		Op  string
		QPs int
		BW  struct {
			AvgMBps float64 `json:"bw_avg_mbps"`
		}
		Check struct{ Bytes, Mismatched int64 }
		Raw   struct{ Ratio float64 } `json:"raw_udp"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Op != "send" || res.QPs != 2 || res.BW.AvgMBps <= 0 || res.Check.Bytes == 0 || res.Check.Mismatched != 0 || res.Raw.Ratio <= 0 {
		t.Errorf("result %+v from %s", res, out)
	}
}

// TestPerfCommandTwoProcesses: a server given only its address, and a
// client naming it, as two perftest processes.
func TestPerfCommandTwoProcesses(t *testing.T) {
	port := freePort(t)
	sOut, sErr, sCode, cOut, cErr, cCode := both(t,
		[]string{"perf", "--addr", "127.0.0.2", "-p", port, "--rdma-port", cmdTestRDMAPort},
		append(append([]string{}, perfBase...), "-p", port, "--op", "write", "--mode", "lat", "--size", "8", "127.0.0.2"))
	if sCode != 0 || cCode != 0 {
		t.Fatalf("server %d: %s%s\nclient %d: %s%s", sCode, sOut, sErr, cCode, cOut, cErr)
	}
	for _, out := range []string{sOut, cOut} {
		if !latRow.MatchString(out) || !strings.Contains(out, "RDMA_Write Latency Test") {
			t.Errorf("output:\n%s", out)
		}
	}
}

func TestPerfUsage(t *testing.T) {
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"perf", "--op", "flush"}, `op "flush"`},
		{[]string{"perf", "--mode", "x"}, `mode "x"`},
		{[]string{"perf", "--op", "atomic", "-A", "swap"}, `atomic type "swap"`},
		{[]string{"perf", "--mtu", "9000"}, "-m/--mtu 9000: must be 256, 512, 1024, 2048 or 4096"},
		{[]string{"perf", "--serve", "127.0.0.2"}, "--serve and a server"},
		{[]string{"perf", "a", "b"}, `unexpected argument "b"`},
	} {
		_, errOut, code := rnic(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.stderr) {
			t.Errorf("%q: %d %q, want 2 and %q", c.args, code, errOut, c.stderr)
		}
	}
	out, _, code := rnic(t, "help", "perf")
	if code != 0 || !strings.Contains(out, "--atomic-type") || !strings.Contains(out, "raw udp") {
		t.Errorf("help: %d\n%s", code, out)
	}
}

var (
	rawTCPBW  = regexp.MustCompile(`(?m)^raw tcp: \d+\.\d\d MB/sec, rnic/raw = \d+\.\d\d .*\n\z`)
	rawTCPLat = regexp.MustCompile(`(?m)^raw tcp: t_typical \d+\.\d\d usec, rnic/raw = \d+\.\d\d .*\n\z`)
)

// TestPerfIWARP: `rnic perf --iwarp` prints perftest's rows and the raw
// TCP line.
func TestPerfIWARP(t *testing.T) {
	for _, c := range []struct {
		args     []string
		row, raw *regexp.Regexp
	}{
		{[]string{"--op", "write", "--size", "4096"}, bwRow, rawTCPBW},
		{[]string{"--op", "send", "--size", "4096"}, bwRow, rawTCPBW},
		{[]string{"--op", "read", "--mode", "lat", "--size", "8"}, latRow, rawTCPLat},
	} {
		out, errOut, code := rnic(t, append([]string{"perf", "--iwarp", "--iters", "100"}, c.args...)...)
		if code != 0 || !c.row.MatchString(out) || !c.raw.MatchString(out) || !strings.Contains(out, "Transport type : IW") {
			t.Errorf("%q: exit %d\n%s%s", c.args, code, out, errOut)
		}
	}
	if _, errOut, code := rnic(t, "perf", "--iwarp", "--serve", "--iwarp-port", "70000"); code != 2 || !strings.Contains(errOut, "--iwarp-port 70000") {
		t.Errorf("--iwarp-port 70000: exit %d, %s", code, errOut)
	}
}

// TestPerfCommandIWARPTwoProcesses: an iWARP server given only its
// address, and a client naming it, as two perftest processes, on
// loopback addresses of this test's own (the CM on its default port).
func TestPerfCommandIWARPTwoProcesses(t *testing.T) {
	port := freePort(t)
	sOut, sErr, sCode, cOut, cErr, cCode := both(t,
		[]string{"perf", "--iwarp", "--addr", "127.0.8.2", "-p", port},
		[]string{"perf", "--iwarp", "--addr", "127.0.8.3", "-p", port, "--iters", "100", "--op", "write", "--size", "4096", "127.0.8.2"})
	if sCode != 0 || cCode != 0 {
		t.Fatalf("server %d: %s%s\nclient %d: %s%s", sCode, sOut, sErr, cCode, cOut, cErr)
	}
	for _, out := range []string{sOut, cOut} {
		if !bwRow.MatchString(out) || !rawTCPBW.MatchString(out) || !strings.Contains(out, "Transport type : IW") {
			t.Errorf("output:\n%s", out)
		}
	}
}

// TestPerfCommandRDMACMTwoProcesses: perftest's -R between two rnic
// processes, a server given its flags and a client naming it, over
// RoCEv2 (rdma_cm's MADs on QP1 between two loopback NICs) and over
// iWARP (MPA on kernel TCP).
func TestPerfCommandRDMACMTwoProcesses(t *testing.T) {
	port := freePort(t)
	for _, c := range []struct {
		name  string
		extra []string
		row   *regexp.Regexp
	}{
		{"roce", []string{"--rdma-port", cmdTestRDMAPort, "--op", "read", "--mode", "bw", "--size", "4096"}, bwRow},
		{"iwarp", []string{"--iwarp", "--op", "send", "--mode", "lat", "--size", "8"}, latRow},
	} {
		t.Run(c.name, func(t *testing.T) {
			flags := append([]string{"perf", "-R", "-p", port, "--iters", "100"}, c.extra...)
			sOut, sErr, sCode, cOut, cErr, cCode := both(t,
				append(append([]string{}, flags...), "--serve", "--addr", "127.0.9.2"),
				append(append([]string{}, flags...), "--addr", "127.0.9.3", "127.0.9.2"))
			if sCode != 0 || cCode != 0 {
				t.Fatalf("server %d: %s%s\nclient %d: %s%s", sCode, sOut, sErr, cCode, cOut, cErr)
			}
			for _, out := range []string{sOut, cOut} {
				if !c.row.MatchString(out) || !strings.Contains(out, "Data ex. method : rdma_cm") {
					t.Errorf("output:\n%s", out)
				}
			}
		})
	}
}

// TestPerfCommandRDMACMThroughRnicd: `rnic perf -R -d NAME@SOCKET`, the
// QPs connected by the daemon's rdma_cm: write_bw as two processes would
// run it, a server and a client each on a NIC of the daemon, and send_lat
// with both sides in one process on one NIC.
func TestPerfCommandRDMACMThroughRnicd(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2, MTU: 9000})
	flags := []string{"perf", "write_bw", "-R", "-s", "4096", "-n", "100"}
	sOut, sErr, sCode, cOut, cErr, cCode := both(t,
		append(append([]string{}, flags...), "--serve", "-d", d.Spec(0).String()),
		append(append([]string{}, flags...), "-d", d.Spec(1).String(), d.NICs[0].Addr.String()))
	if sCode != 0 || cCode != 0 {
		t.Fatalf("server %d: %s%s\nclient %d: %s%s", sCode, sOut, sErr, cCode, cOut, cErr)
	}
	for _, out := range []string{sOut, cOut} {
		if !bwRow.MatchString(out) || !strings.Contains(out, "Data ex. method : rdma_cm") {
			t.Errorf("write_bw output:\n%s", out)
		}
	}
	out, errOut, code := rnic(t, "perf", "send_lat", "-R", "-s", "8", "-n", "100", "-d", d.Spec(0).String())
	if code != 0 || !latRow.MatchString(out) || !strings.Contains(out, "Data ex. method : rdma_cm") {
		t.Errorf("send_lat: exit %d\n%s%s", code, out, errOut)
	}
}

// TestPerfPerftestStyle: a perftest test name picks the op and mode
// (overriding --op/--mode), perftest's flags are taken, -c UD runs a UD
// SEND test, and -R with UD and an unknown -c are refused.
func TestPerfPerftestStyle(t *testing.T) {
	for _, c := range []struct {
		args  []string
		title string
		row   *regexp.Regexp
	}{
		{[]string{"ib_write_lat", "--op", "read", "-s", "8", "-F", "-d", "rxe0"}, "RDMA_Write Latency Test", latRow},
		{[]string{"send_bw", "-c", "UD", "-s", "4096", "-m", "4096"}, "Send BW Test", bwRow},
	} {
		out, errOut, code := rnic(t, append(append([]string{}, perfBase...), c.args...)...)
		if code != 0 || !strings.Contains(out, c.title) || !c.row.MatchString(out) {
			t.Errorf("%q: exit %d\n%s%s", c.args, code, out, errOut)
		}
		if c.args[0] == "send_bw" && !strings.Contains(out, "Connection type : UD") {
			t.Errorf("%q: not UD:\n%s", c.args, out)
		}
	}
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"perf", "send_bw", "-R", "-c", "UD", "-s", "64"}, "-R with UD QPs is not supported"},
		{[]string{"perf", "send_bw", "-c", "UC"}, `-c "UC": RC or UD`},
		{[]string{"perf", "write_bw", "-c", "UD"}, "UD carries SENDs only"},
		{[]string{"perf", "write_bw", "a", "b"}, `unexpected argument "b"`},
	} {
		_, errOut, code := rnic(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.stderr) {
			t.Errorf("%q: %d %q, want 2 and %q", c.args, code, errOut, c.stderr)
		}
	}
}
