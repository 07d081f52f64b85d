package dropin

// rnic exec's view (nic/view): what a program sees of the devices beyond
// the libibverbs ABI, that two rnic execs share it, and that nothing
// outside it changes.

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// viewScript prints, from inside the view, what UCX, libfabric and
// pyverbs look at, one "key=value" line each (a file's content as the
// value; a missing one prints nothing).
const viewScript = `
for f in /dev/infiniband/uverbs0 /dev/infiniband/uverbs1 /dev/infiniband/rdma_cm; do
	if [ -c "$f" ] && { exec 3<>"$f"; } 2>/dev/null; then exec 3>&-; echo "chardev $f=rw"; fi
done
s=/sys/class/infiniband
for k in rnic0/node_guid rnic0/node_type rnic1/node_guid rnic0/ports/1/state rnic0/ports/1/phys_state \
	rnic0/ports/1/link_layer rnic0/ports/1/gids/0 rnic0/ports/1/gid_attrs/types/0 rnic0/ports/1/gid_attrs/ndevs/0 \
	rnic1/ports/1/gids/0 rnic1/ports/1/gid_attrs/ndevs/0 rnic0/ports/1/pkeys/0 rnic0/ports/1/rate rnic0/ports/1/cap_mask; do
	[ -r "$s/$k" ] && echo "$k=$(cat "$s/$k")"
done
echo "device/net=$(ls $s/rnic0/device/net/)"
u=/sys/class/infiniband_verbs
echo "abi=$(cat $u/abi_version)"
echo "uverbs0=$(cat $u/uverbs0/ibdev)"
echo "uverbs1=$(cat $u/uverbs1/ibdev)"
echo "sysnet=$(ls /sys/class/net | tr '\n' ' ')"
echo "netns=$(readlink /proc/self/ns/net)"
echo "caps=$(grep CapEff /proc/self/status | tr -d '\t')"
echo "id=$(id -u)"
echo "wd=$(pwd)"
`

// keyValues parses viewScript's output.
func keyValues(out string) map[string]string {
	kv := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

// gidOf is an IPv4 address's RoCEv2 GID as the kernel's sysfs prints it.
func gidOf(ip string) string {
	b := netip.MustParseAddr("::ffff:" + ip).As16()
	var parts []string
	for i := 0; i < 16; i += 2 {
		parts = append(parts, fmt.Sprintf("%02x%02x", b[i], b[i+1]))
	}
	return strings.Join(parts, ":")
}

// TestViewDevices: inside rnic exec, as the plain user with no
// capabilities, /dev/infiniband/uverbsN are character devices it may open
// read-write, /sys/class/infiniband shows each NIC as the kernel would
// (node GUID as ibv_devinfo prints it through the drop-in, the GID, RoCE
// v2, the interface), and an interface other than lo, up, carries each
// NIC's address.
func TestViewDevices(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "ibv_devinfo", "ip")
	d := sharedDaemon(t)
	p := d.runOne(t, "sh", "-c", viewScript)
	if !p.ok() {
		t.Fatal(p.report())
	}
	kv := keyValues(p.out.String())
	info := d.runOne(t, "ibv_devinfo", "-d", "rnic0")
	m := regexp.MustCompile(`node_guid:\s+(\S+)`).FindStringSubmatch(info.out.String())
	if !info.ok() || m == nil {
		t.Fatalf("ibv_devinfo prints no node_guid\n%s", info.report())
	}
	want := map[string]string{
		"chardev /dev/infiniband/uverbs0": "rw", "chardev /dev/infiniband/uverbs1": "rw", "chardev /dev/infiniband/rdma_cm": "rw",
		"rnic0/node_guid": m[1], "rnic0/node_type": "1: CA",
		"rnic0/ports/1/state": "4: ACTIVE", "rnic0/ports/1/phys_state": "5: LinkUp", "rnic0/ports/1/link_layer": "Ethernet",
		"rnic0/ports/1/gids/0": gidOf(d.addrs[0]), "rnic1/ports/1/gids/0": gidOf(d.addrs[1]),
		"rnic0/ports/1/gid_attrs/types/0": "RoCE v2", "rnic0/ports/1/gid_attrs/ndevs/0": "rnic0",
		"rnic1/ports/1/gid_attrs/ndevs/0": "rnic1", "rnic0/ports/1/pkeys/0": "0xffff",
		"rnic0/ports/1/rate": "2.5 Gb/sec (1X SDR)", "rnic0/ports/1/cap_mask": "0x04010000",
		"device/net": "rnic0", "abi": "6", "uverbs0": "rnic0", "uverbs1": "rnic1",
		"caps": "CapEff:0000000000000000", "id": fmt.Sprint(build.uid), "wd": build.dir,
	}
	for k, v := range want {
		if kv[k] != v {
			t.Errorf("in the view, %s is %q, want %q", k, kv[k], v)
		}
	}
	if t.Failed() {
		t.Log(p.report())
	}
	checkInterfaces(t, d)
}

// checkInterfaces: ip -j addr in the view shows each NIC's address on an
// interface named after it, up, and on no interface named lo (libfabric's
// vrb_getifaddrs skips lo and interfaces that are down).
func checkInterfaces(t *testing.T, d *daemon) {
	p := d.runOne(t, "ip", "-j", "addr", "show")
	if !p.ok() {
		t.Fatal(p.report())
	}
	var ifs []struct {
		Name     string   `json:"ifname"`
		Flags    []string `json:"flags"`
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(p.out.String()), &ifs); err != nil {
		t.Fatalf("ip -j addr: %v\n%s", err, p.report())
	}
	for i, name := range []string{"rnic0", "rnic1"} {
		found := false
		for _, ifc := range ifs {
			for _, a := range ifc.AddrInfo {
				if a.Local == d.addrs[i] && ifc.Name != "lo" && slices.Contains(ifc.Flags, "UP") {
					found = true
					if ifc.Name != name || a.PrefixLen != 8 {
						t.Errorf("%s's address is on %s/%d, want on %s/8", name, ifc.Name, a.PrefixLen, name)
					}
				}
			}
		}
		if !found {
			t.Errorf("no interface but lo, up, carries %s's address %s\n%s", name, d.addrs[i], p.report())
		}
	}
}

// TestViewShared: two rnic execs are in one network namespace, not the
// host's (ibv_rc_pingpong's server and client, TestPingpong, meet over
// TCP in it); rnic exec run inside the view stays in it.
func TestViewShared(t *testing.T) {
	needLibrary(t)
	d := sharedDaemon(t)
	a := keyValues(d.runOne(t, "sh", "-c", viewScript).out.String())["netns"]
	b := keyValues(d.runOne(t, "sh", "-c", viewScript).out.String())["netns"]
	host, _ := os.Readlink("/proc/self/ns/net")
	if a == "" || a != b || a == host {
		t.Errorf("two rnic execs are in network namespaces %q and %q (the host's %q): want one of their own", a, b, host)
	}
	nested := d.runOne(t, "sh", "-c", `echo "outer=$(readlink /proc/self/ns/mnt)"; `+build.rnic+` exec -S `+d.socket+
		` -- sh -c 'echo "inner=$(readlink /proc/self/ns/mnt)"; test -c /dev/infiniband/uverbs0 && echo dev=yes'`)
	kv := keyValues(nested.out.String())
	if !nested.ok() || kv["outer"] == "" || kv["inner"] != kv["outer"] || kv["dev"] != "yes" || strings.Contains(nested.out.String(), "without the device view") {
		t.Errorf("rnic exec inside rnic exec left the view\n%s", nested.report())
	}
}

// hostState is what the view must leave alone: the mounts under /dev and
// /sys, the interfaces that carry the NICs' addresses or bear their
// names, and whether /dev/infiniband and /sys/class/infiniband exist.
func hostState(t *testing.T, d *daemon) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && (f[4] == "/dev" || f[4] == "/sys" ||
			strings.HasPrefix(f[4], "/dev/") || strings.HasPrefix(f[4], "/sys/")) {
			s = append(s, "mount "+strings.Join(f[3:5], " "))
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifs {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ip, _, _ := net.ParseCIDR(a.String()); ip != nil && (ip.String() == d.addrs[0] || ip.String() == d.addrs[1]) {
				s = append(s, "address "+ifc.Name+" "+a.String())
			}
		}
		if ifc.Name == "rnic0" || ifc.Name == "rnic1" {
			s = append(s, "interface "+ifc.Name)
		}
	}
	for _, p := range []string{"/dev/infiniband", "/sys/class/infiniband", "/sys/class/infiniband_verbs"} {
		if _, err := os.Stat(p); err == nil {
			s = append(s, "exists "+p)
		}
	}
	return strings.Join(s, "\n")
}

// TestViewLeavesHostAlone: while a program runs in the view and after,
// the host's mounts, interfaces and /dev and /sys are as before, and a
// program run without rnic exec (or with --no-view) sees none of the
// view; the holder exits when its rnicd stops.
func TestViewLeavesHostAlone(t *testing.T) {
	needLibrary(t)
	d := ownDaemon(t)
	viewDir, err := userDir(build.dir, fmt.Sprintf("view-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	before := hostState(t, d)
	env := []string{"RNIC_VIEW_DIR=" + viewDir}
	in := start(t, "in view", env, nil, build.rnic, "exec", "-S", d.socket, "--", "sh", "-c", "test -c /dev/infiniband/uverbs0 && echo inside && exec sleep 60")
	deadline := time.Now().Add(programTimeout)
	for !strings.Contains(in.out.String(), "inside") {
		select {
		case <-in.done:
			t.Fatalf("the program in the view ended\n%s", in.report())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the program in the view did not start\n%s", in.report())
		}
	}
	if during := hostState(t, d); during != before {
		t.Errorf("the host changed while a program runs in the view:\nbefore:\n%s\nduring:\n%s", before, during)
	}
	for _, argv := range [][]string{
		{"sh", "-c", "ls /dev/infiniband /sys/class/infiniband 2>/dev/null; ls /sys/class/net"},
		{build.rnic, "exec", "--no-view", "-S", d.socket, "--", "sh", "-c", "ls /dev/infiniband /sys/class/infiniband 2>/dev/null; ls /sys/class/net"},
	} {
		p := start(t, "outside", env, nil, argv...)
		p.wait(time.After(programTimeout))
		if strings.Contains(p.out.String(), "uverbs") || strings.Contains(p.out.String(), "rnic0") {
			t.Errorf("a program outside the view sees it\n%s", p.report())
		}
	}
	pid := holderPID(t, viewDir)
	in.kill()
	d.stop()
	for deadline := time.Now().Add(programTimeout); ; {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder (pid %d) outlives its rnicd", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after := hostState(t, d); after != before {
		t.Errorf("the host changed after the view:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// holderPID reads the pid file of the one view in dir.
func holderPID(t *testing.T, dir string) int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	if len(files) != 1 {
		t.Fatalf("%d pid files in %s, want 1", len(files), dir)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestViewIWARP: an iWARP NIC shows as an RNIC, on Ethernet, with its
// GID and no RoCE GID type.
func TestViewIWARP(t *testing.T) {
	needLibrary(t)
	d := sharedDaemonOf(t, nicTCP)
	p := d.runOne(t, "sh", "-c", viewScript)
	kv := keyValues(p.out.String())
	for k, v := range map[string]string{"rnic0/node_type": "4: RNIC", "rnic0/ports/1/link_layer": "Ethernet",
		"rnic0/ports/1/gids/0": gidOf(d.addrs[0]), "rnic0/ports/1/gid_attrs/types/0": "", "device/net": "rnic0"} {
		if kv[k] != v {
			t.Errorf("iWARP: %s is %q, want %q\n%s", k, kv[k], v, p.report())
		}
	}
}

// TestViewConcurrentStart: rnic execs started at once on a new rnicd
// make one view between them (creation is under a lock), none going
// without.
func TestViewConcurrentStart(t *testing.T) {
	needLibrary(t)
	d := ownDaemon(t)
	var ps []*proc
	for i := range 4 {
		ps = append(ps, d.run(t, fmt.Sprint("exec ", i), "", nil, "readlink", "/proc/self/ns/net"))
	}
	deadline := time.After(programTimeout)
	seen := map[string]bool{}
	for _, p := range ps {
		p.wait(deadline)
		if !p.ok() || strings.Contains(p.out.String(), "without") {
			t.Fatalf("an rnic exec started with others failed or went without the view\n%s", p.report())
		}
		seen[strings.TrimSpace(p.out.String())] = true
	}
	if len(seen) != 1 {
		t.Errorf("4 rnic execs started at once are in %d network namespaces, want 1: %v", len(seen), seen)
	}
}

// TestViewRoot: root's rnic exec on root's rnicd gets a view in mount and
// network namespaces alone (no user namespace), as root.
func TestViewRoot(t *testing.T) {
	needLibrary(t)
	if os.Getuid() != 0 {
		t.Skip("needs root: the view of a root rnic exec")
	}
	sock := filepath.Join(t.TempDir(), "rnicd.sock")
	addr := loopbackAddr()
	rnicd := &proc{name: "rnicd", cmd: exec.Command(build.rnicd, "--udp", addr, "--socket", sock), out: new(syncBuffer), done: make(chan struct{})}
	rnicd.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	rnicd.cmd.Stdout, rnicd.cmd.Stderr = rnicd.out, rnicd.out
	if err := rnicd.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { rnicd.err = rnicd.cmd.Wait(); close(rnicd.done) }()
	d := &daemon{p: rnicd, socket: sock}
	t.Cleanup(d.stop)
	for deadline := time.Now().Add(programTimeout); !strings.Contains(rnicd.out.String(), "rnicd: serving rnic0 on "); {
		if time.Now().After(deadline) {
			t.Fatalf("rnicd did not serve\n%s", rnicd.report())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := exec.Command(build.rnic, "exec", "-S", sock, "--", "sh", "-c", viewScript)
	c.Env = append(os.Environ(), "RNIC_VIEW_DIR="+filepath.Join(t.TempDir(), "v"))
	out, err := c.CombinedOutput()
	kv := keyValues(string(out))
	host, _ := os.Readlink("/proc/self/ns/net")
	if err != nil || kv["chardev /dev/infiniband/uverbs0"] != "rw" || kv["device/net"] != "rnic0" || kv["id"] != "0" ||
		kv["netns"] == host || kv["netns"] == "" {
		t.Errorf("root's rnic exec: %v, want the view as root\n%s", err, out)
	}
	user := exec.Command(build.rnic, "exec", "-S", sock, "--", "readlink", "/proc/self/ns/user")
	user.Env = c.Env
	hostUser, _ := os.Readlink("/proc/self/ns/user")
	if out, err := user.Output(); err != nil || strings.TrimSpace(string(out)) != hostUser {
		t.Errorf("root's view is in user namespace %q (%v), want the host's %q", out, err, hostUser)
	}
}

// TestViewLibfabric: libfabric's verbs provider offers its rdma_cm
// endpoints (FI_EP_MSG) on each NIC only in the view: it finds a device
// by binding the addresses of the interfaces getifaddrs() lists, lo
// excepted (vrb_getifaddrs).
func TestViewLibfabric(t *testing.T) {
	needLibrary(t)
	if _, err := exec.LookPath("fi_info"); err != nil {
		t.Skip("fi_info is not installed: apt-get install libfabric-bin")
	}
	d := sharedDaemon(t)
	p := d.runOne(t, "fi_info", "-p", "verbs")
	for _, name := range []string{"rnic0", "rnic1"} {
		re := regexp.MustCompile(`(?m)^\s+domain: ` + name + `\n\s+version: \S+\n\s+type: FI_EP_MSG$`)
		if !p.ok() || !re.MatchString(p.out.String()) {
			t.Errorf("fi_info -p verbs offers no FI_EP_MSG on %s\n%s", name, p.report())
		}
	}
}

// TestViewNoUserns: where the kernel refuses the user namespace (here a
// namespace whose max_user_namespaces is 0, made as root), rnic exec says
// so in one line and runs the program without the view.
func TestViewNoUserns(t *testing.T) {
	needLibrary(t)
	if os.Getuid() != 0 || !build.dropped {
		t.Skip("needs root: to make a user namespace that forbids user namespaces")
	}
	d := sharedDaemon(t)
	script := `echo 0 > /proc/sys/user/max_user_namespaces || exit 3
exec setpriv --reuid ` + fmt.Sprint(build.uid) + ` --regid ` + fmt.Sprint(build.gid) + ` --clear-groups ` +
		build.rnic + ` exec -S ` + d.socket + ` -- sh -c 'test -e /dev/infiniband && echo view; echo ran'`
	// A directory of its own: the shared daemon's view, made by other
	// tests in the host's namespaces, is not to be entered from here.
	viewDir, err := userDir(build.dir, fmt.Sprintf("view-nouserns-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command("sh", "-c", script)
	c.Env = append(os.Environ(), "RNIC_VIEW_DIR="+viewDir)
	// Everyone up to nobody maps to themselves, so rnicd's uid still
	// reads as nobody's inside; root there may lower the limit.
	c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, Pdeathsig: syscall.SIGKILL,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}}, GidMappingsEnableSetgroups: true}
	out, err := c.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 2 || lines[1] != "ran" ||
		!strings.HasPrefix(lines[0], "rnic exec: running without the device view: no view of the devices: the kernel refuses the namespaces") {
		t.Errorf("no user namespaces: %v, want one line on the view, then the program without it\n%s", err, out)
	}
}

// ownDaemon starts an rnicd of the test's own (not the shared one), which
// the test may stop; it is stopped when the test ends in any case.
func ownDaemon(t *testing.T) *daemon {
	t.Helper()
	var cleanups []func()
	t.Cleanup(func() {
		for _, f := range cleanups {
			f()
		}
	})
	d, err := startDaemon(func(f func()) { cleanups = append(cleanups, f) }, nicUDP)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
