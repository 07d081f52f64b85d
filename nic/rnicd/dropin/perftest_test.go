package dropin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPerftest: perftest's programs, unmodified (they post through the
// ibv_wr_* API by default), server on rnic0 and client on rnic1: the
// bandwidth tests over RC, SEND over UD too, both atomics, the latency
// tests, and one over every size (-a). Short runs: the figures are
// measured elsewhere, here every program must complete and report.
func TestPerftest(t *testing.T) {
	needLibrary(t)
	cases := []struct {
		prog  string
		args  []string
		sizes []int // the result rows the client must print
	}{
		{"ib_write_bw", []string{"-n", "200"}, []int{65536}},
		{"ib_read_bw", []string{"-n", "200"}, []int{65536}},
		{"ib_send_bw", []string{"-n", "200"}, []int{65536}},
		{"ib_send_bw", []string{"-n", "200", "-c", "UD", "-s", "1024"}, []int{1024}},
		{"ib_atomic_bw", []string{"-n", "200", "-A", "FETCH_AND_ADD"}, []int{8}},
		{"ib_atomic_bw", []string{"-n", "200", "-A", "CMP_AND_SWAP"}, []int{8}},
		{"ib_write_lat", []string{"-n", "100"}, []int{2}},
		{"ib_read_lat", []string{"-n", "100"}, []int{2}},
		{"ib_send_lat", []string{"-n", "100"}, []int{2}},
		// -e: completion events. One channel serves both CQs, and after
		// each event ib_send_lat polls the CQ it waits for, once: a send
		// completion whose event it took at the receive wait stays in its
		// 1-entry send CQ, and the next one's event must come anyway.
		{"ib_send_lat", []string{"-n", "100", "-e"}, []int{2}},
		{"ib_write_bw", []string{"-n", "5", "-a"}, allSizes()},
	}
	for _, c := range cases {
		t.Run(c.prog+strings.Join(c.args, ""), func(t *testing.T) {
			needPrograms(t, c.prog)
			d := sharedDaemon(t)
			port := freeTCPPort(t)
			// -F: no CPU frequency check (a VM has no cpufreq); -x 0:
			// the RoCEv2 GID of the NIC's IPv4 address.
			common := append([]string{c.prog, "-p", strconv.Itoa(port), "-i", "1", "-x", "0", "-F"}, c.args...)
			server := append(append([]string{}, common...), "-d", "rnic0")
			client := append(append([]string{}, common...), "-d", "rnic1", d.addrs[0])
			_, cli := d.runPair(t, port, server, client)
			iters := c.args[1]
			for _, size := range c.sizes {
				row := regexp.MustCompile(fmt.Sprintf(`(?m)^\s*%d\s+%s\s+[\d.]+\s+[\d.]+`, size, iters))
				if !row.MatchString(cli.out.String()) {
					t.Errorf("no result row for %d bytes, %s iterations\n%s", size, iters, cli.report())
				}
			}
		})
	}
}

// allSizes are the sizes perftest's -a runs: 2 to 2^23.
func allSizes() []int {
	var s []int
	for n := 2; n <= 1<<23; n *= 2 {
		s = append(s, n)
	}
	return s
}
