package roce_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEngineLinksNoPacketStack: the RoCE engine, its connection manager
// and its wire formats link neither gVisor's netstack nor gopacket. They
// import transport for its interfaces only; capture writing (transport/pcap)
// and the TAP mode's stack are programs' and backends' business, and an
// engine that links them carries dozens of packages it never calls.
func TestEngineLinksNoPacketStack(t *testing.T) {
	checkLinksNoPacketStack(t, "./", "./cm", "./cm/mad", "./wire")
}

// checkLinksNoPacketStack fails for every package of pkgs (relative to the
// test's directory) whose non-test dependencies hold a gVisor or gopacket
// package.
func checkLinksNoPacketStack(t *testing.T, pkgs ...string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list dependencies with: %v", err)
	}
	args := append([]string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, pkgs...)
	out, err := exec.Command(goTool, args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(pkgs) {
		t.Fatalf("go list gave %d packages for %d: %q", len(lines), len(pkgs), out)
	}
	for _, line := range lines {
		pkg, deps, _ := strings.Cut(line, " ")
		for _, dep := range strings.Fields(deps) {
			if strings.HasPrefix(dep, "gvisor.dev/") || strings.HasPrefix(dep, "github.com/gopacket/") {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}
