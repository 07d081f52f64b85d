package dropin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPingpong: libibverbs' own examples (ibverbs-utils), unmodified,
// server on rnic0 and client on rnic1: RC (buffers checked with --chk,
// and through the ibv_wr_* API with -N), UC, UD and SRQ, at several sizes,
// polling and sleeping on completion events (-e).
func TestPingpong(t *testing.T) {
	needLibrary(t)
	cases := []struct {
		prog string
		args []string
	}{
		{"ibv_rc_pingpong", []string{"-s", "1", "--chk"}},
		{"ibv_rc_pingpong", []string{"-s", "4096", "--chk"}},
		{"ibv_rc_pingpong", []string{"-s", "65536", "--chk"}},
		{"ibv_rc_pingpong", []string{"-s", "4096", "--chk", "-e"}},
		{"ibv_rc_pingpong", []string{"-s", "1000", "--chk", "-N"}},
		{"ibv_uc_pingpong", []string{"-s", "1"}},
		{"ibv_uc_pingpong", []string{"-s", "4096"}},
		{"ibv_uc_pingpong", []string{"-s", "4096", "-e"}},
		{"ibv_ud_pingpong", []string{"-s", "1"}},
		{"ibv_ud_pingpong", []string{"-s", "1024"}},
		{"ibv_ud_pingpong", []string{"-s", "512", "-e"}},
		{"ibv_srq_pingpong", []string{"-s", "1"}},
		{"ibv_srq_pingpong", []string{"-s", "4096"}},
		{"ibv_srq_pingpong", []string{"-s", "4096", "-e", "-q", "4"}},
	}
	for _, c := range cases {
		t.Run(c.prog+strings.Join(c.args, ""), func(t *testing.T) {
			needPrograms(t, c.prog)
			d := sharedDaemon(t)
			port := freeTCPPort(t)
			const iters = 50
			common := append([]string{c.prog, "-p", strconv.Itoa(port), "-g", "0", "-n", strconv.Itoa(iters)}, c.args...)
			server := append(append([]string{}, common...), "-d", "rnic0")
			client := append(append([]string{}, common...), "-d", "rnic1", d.addrs[0])
			srv, cli := d.runPair(t, port, server, client)
			size := c.args[1]
			for _, p := range []*proc{srv, cli} {
				checkPingpongOutput(t, p, size, iters, c.prog == "ibv_srq_pingpong")
			}
		})
	}
}

// checkPingpongOutput: the program's closing lines, as libibverbs'
// examples print them after every exchange completed.
func checkPingpongOutput(t *testing.T, p *proc, size string, iters int, srq bool) {
	t.Helper()
	out := p.out.String()
	bytes, _ := strconv.Atoi(size)
	// srq_pingpong counts iterations over all its QPs together.
	want := []string{
		`(?m)^\d+ bytes in [\d.]+ seconds = [\d.]+ Mbit/sec$`,
		fmt.Sprintf(`(?m)^%d iters in [\d.]+ seconds = [\d.]+ usec/iter$`, iters),
		`(?m)^\s+local address:\s+LID 0x[0-9a-f]+, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}`,
		`(?m)^\s+remote address:\s+LID 0x[0-9a-f]+, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}`,
	}
	if !srq {
		want[0] = fmt.Sprintf(`(?m)^%d bytes in [\d.]+ seconds = [\d.]+ Mbit/sec$`, 2*bytes*iters)
	}
	for _, w := range want {
		if !regexp.MustCompile(w).MatchString(out) {
			t.Errorf("%s: no line matching %s\n%s", p.name, w, p.report())
		}
	}
}
