package dropin

import (
	"regexp"
	"strings"
	"testing"
)

// TestIbvDevices: ibv_devices lists both NICs of the daemon with a node
// GUID each.
func TestIbvDevices(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "ibv_devices")
	d := sharedDaemon(t)
	p := d.runOne(t, "ibv_devices")
	if !p.ok() {
		t.Fatal(p.report())
	}
	for _, name := range []string{"rnic0", "rnic1"} {
		if !regexp.MustCompile(`(?m)^\s+` + name + `\s+[0-9a-f]{16}\s*$`).MatchString(p.out.String()) {
			t.Errorf("ibv_devices does not list %s with a GUID\n%s", name, p.report())
		}
	}
}

// TestIbvDevinfo: ibv_devinfo -v shows each NIC's port ACTIVE on Ethernet
// and its address among the GIDs as a RoCEv2 GID.
func TestIbvDevinfo(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "ibv_devinfo")
	d := sharedDaemon(t)
	for i, name := range []string{"rnic0", "rnic1"} {
		p := d.runOne(t, "ibv_devinfo", "-v", "-d", name)
		if !p.ok() {
			t.Fatal(p.report())
		}
		out := p.out.String()
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^hca_id:\s+` + name + `$`),
			regexp.MustCompile(`(?m)^\s+transport:\s+InfiniBand \(0\)$`),
			regexp.MustCompile(`(?m)^\s+port:\s+1$`),
			regexp.MustCompile(`(?m)^\s+state:\s+PORT_ACTIVE \(4\)$`),
			regexp.MustCompile(`(?m)^\s+link_layer:\s+Ethernet$`),
			regexp.MustCompile(`(?m)^\s+active_mtu:\s+(1024|2048|4096) \(\d\)$`),
			regexp.MustCompile(`(?m)^\s+GID\[\s*\d+\]:\s+::ffff:` + regexp.QuoteMeta(d.addrs[i]) + `, RoCE v2$`),
		} {
			if !want.MatchString(out) {
				t.Errorf("ibv_devinfo -v -d %s: no line matching %s\n%s", name, want, p.report())
			}
		}
		if strings.Contains(out, "rnic"+string(rune('1'-i))) {
			t.Errorf("ibv_devinfo -d %s shows the other NIC too\n%s", name, p.report())
		}
	}
}
