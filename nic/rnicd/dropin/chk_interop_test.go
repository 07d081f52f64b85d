package dropin

import (
	"regexp"
	"strconv"
	"testing"
)

// invalidPage is the line both programs print for a page that failed --chk.
var invalidPage = regexp.MustCompile(`(?m)^invalid data in page`)

// TestPingpongChkWithRCPingpong: rnic pingpong --chk and an unmodified
// ibv_rc_pingpong --chk check each other's data, in both roles: each
// checks what the other's program writes (rc_pingpong writes 0 at every
// page start over a 0x7b fill, and checks those zeros). rnic's check used
// to flag every page a real rc_pingpong sent.
func TestPingpongChkWithRCPingpong(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "ibv_rc_pingpong")
	for _, c := range []struct {
		name     string
		realSide string // which side is ibv_rc_pingpong
	}{{"rnic-server", "client"}, {"rnic-client", "server"}} {
		t.Run(c.name, func(t *testing.T) {
			d := sharedDaemon(t)
			port := strconv.Itoa(freeTCPPort(t))
			common := []string{"--chk", "-s", "8192", "-n", "100", "-g", "0", "-p", port}
			real := func(dev string, extra ...string) []string {
				return append(append([]string{"ibv_rc_pingpong", "-d", dev}, common...), extra...)
			}
			ours := func(dev string, extra ...string) []string {
				return append(append([]string{build.rnic, "pingpong", "-d", dev + "@" + d.socket}, common...), extra...)
			}
			server, client := ours("rnic0"), real("rnic1", d.addrs[0])
			if c.realSide == "server" {
				server, client = real("rnic0"), ours("rnic1", d.addrs[0])
			}
			p, _ := strconv.Atoi(port)
			srv, cli := d.runPair(t, p, server, client)
			for _, pr := range []*proc{srv, cli} {
				checkPingpongOutput(t, pr, "8192", 100, false)
				if invalidPage.MatchString(pr.out.String()) {
					t.Errorf("%s flagged the peer's data\n%s", pr.name, pr.report())
				}
			}
		})
	}
}
