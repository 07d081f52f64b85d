package dropin

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// tenantDaemon is an rnicd run by the test's user (root, to own tenant
// sockets for the programs' user) with rnic0 on its own socket, rnic1 as
// tenant a's, served to the programs' user, and rnic2 as tenant b's,
// whose socket anyone may reach but which serves only uid 4242.
type tenantDaemon struct {
	host   *daemon
	a, b   *daemon // the same rnicd, seen through a tenant's socket
	addrs  [3]string
	socket map[string]string
}

func startTenantDaemon(t *testing.T) *tenantDaemon {
	t.Helper()
	dir, err := userDir(build.dir, fmt.Sprintf("tenants-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	td := &tenantDaemon{addrs: [3]string{loopbackAddr(), loopbackAddr(), loopbackAddr()}, socket: map[string]string{
		"host": filepath.Join(dir, "host", "rnicd.sock"), "a": filepath.Join(dir, "a", "rnicd.sock"),
		"b": filepath.Join(dir, "b", "rnicd.sock")}}
	argv := []string{build.rnicd, "--udp", td.addrs[0], "--socket", td.socket["host"],
		"--device", "name=rnic1,udp=" + td.addrs[1], "--device", "name=rnic2,udp=" + td.addrs[2],
		"--tenant", fmt.Sprintf("name=a,nics=rnic1,socket=%s,uid=%d", td.socket["a"], build.uid),
		"--tenant", fmt.Sprintf("name=b,nics=rnic2,socket=%s,uid=4242,mode=0666", td.socket["b"])}
	p := &proc{name: "rnicd", cmd: exec.Command(argv[0], argv[1:]...), out: new(syncBuffer), done: make(chan struct{})}
	td.host = &daemon{p: p, socket: td.socket["host"]}
	stdout, w := io.Pipe()
	if err := td.host.launch(t.Cleanup, stdout, w, "rnicd: tenant b: serving rnic2 on "+td.socket["b"]); err != nil {
		t.Fatal(err)
	}
	td.a = &daemon{p: p, socket: td.socket["a"], addrs: [2]string{td.addrs[1], td.addrs[1]}}
	td.b = &daemon{p: p, socket: td.socket["b"], addrs: [2]string{td.addrs[2], td.addrs[2]}}
	return td
}

// TestTenants: an unmodified ibv_devinfo, as the programs' user, sees
// through tenant a's socket only a's NIC, and cannot open the others;
// through b's socket (which serves only uid 4242) it is refused; two
// ibv_rc_pingpong of tenant a talk through its NIC, and tenant a's
// counters (rnic stat on its socket) count their work requests.
func TestTenants(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "ibv_devinfo", "ibv_rc_pingpong")
	if os.Geteuid() != 0 {
		t.Skip("needs root: rnicd gives tenant a's socket to the programs' user (nobody)")
	}
	td := startTenantDaemon(t)

	p := td.a.runOne(t, "ibv_devinfo", "-l")
	if !p.ok() {
		t.Fatal(p.report())
	}
	if got := regexp.MustCompile(`rnic\d`).FindAllString(p.out.String(), -1); strings.Join(got, " ") != "rnic1" {
		t.Errorf("ibv_devinfo -l through tenant a's socket lists %v, want only rnic1\n%s", got, p.report())
	}
	for _, other := range []string{"rnic0", "rnic2"} {
		p := td.a.runOne(t, "ibv_devinfo", "-d", other)
		if p.ok() || strings.Contains(p.out.String(), "hca_id:\t"+other) {
			t.Errorf("ibv_devinfo -d %s through tenant a's socket: want it not found\n%s", other, p.report())
		}
	}
	if p := td.b.runOne(t, "ibv_devinfo", "-l"); p.ok() && strings.Contains(p.out.String(), "rnic2") {
		t.Errorf("tenant b (uid 4242 only) served the programs' user (uid %d)\n%s", build.uid, p.report())
	}

	port := freeTCPPort(t)
	const iters = 20
	common := []string{"ibv_rc_pingpong", "-p", strconv.Itoa(port), "-g", "0", "-n", strconv.Itoa(iters), "-s", "4096", "-d", "rnic1"}
	srv, cli := td.a.runPair(t, port, common, append(append([]string{}, common...), td.addrs[1]))
	for _, p := range []*proc{srv, cli} {
		checkPingpongOutput(t, p, "4096", iters, false)
	}
	st := tenantStat(t, userCommand, td.socket["a"])
	if len(st.Tenants) != 1 || st.Tenants[0].Name != "a" || strings.Join(st.Tenants[0].NICs, ",") != "rnic1" {
		t.Fatalf("rnic stat on tenant a's socket shows tenants %+v, want a (rnic1) only", st.Tenants)
	}
	for _, c := range st.Counters {
		// Each side posts a receive per iteration and a send per one
		// (and the receives it refills at start).
		if c.Scope == "tenant" && (c.Counters["send_wrs"] < 2*iters || c.Counters["recv_wrs"] < 2*iters || c.Counters["completions"] < 4*iters) {
			t.Errorf("tenant a's counters after two pingpongs of %d iterations: %v", iters, c.Counters)
		}
	}
	host := tenantStat(t, rootCommand, td.socket["host"])
	var names []string
	for _, tn := range host.Tenants {
		names = append(names, tn.Name)
	}
	if strings.Join(names, ",") != ",a,b" {
		t.Errorf("rnic stat on the host's socket shows tenants %q, want the host's, a and b", names)
	}
}

// tenantsStat is the part of rnic stat --json this test reads.
type tenantsStat struct {
	Tenants []struct {
		Name string   `json:"name"`
		NICs []string `json:"nics"`
	} `json:"tenants"`
	Counters []struct {
		Scope    string            `json:"scope"`
		Counters map[string]uint64 `json:"counters"`
	} `json:"counters"`
}

// tenantStat runs rnic stat --json on socket, as command makes it run
// (userCommand: as the programs' user, whom tenant a serves; rootCommand:
// as the daemon's user, whom its own socket serves).
func tenantStat(t *testing.T, command func([]string) *exec.Cmd, socket string) tenantsStat {
	t.Helper()
	out, err := command([]string{build.rnic, "stat", "--socket", socket, "--json"}).CombinedOutput()
	if err != nil {
		t.Fatalf("rnic stat --socket %s: %v\n%s", socket, err, out)
	}
	var st tenantsStat
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("rnic stat --json: %v\n%s", err, out)
	}
	return st
}

func rootCommand(argv []string) *exec.Cmd { return exec.Command(argv[0], argv[1:]...) }
