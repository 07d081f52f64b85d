package cdispec_test

// Rootless podman: an unprivileged user (nobody, given a subordinate uid
// and gid range for the test) runs its own rnicd and podman; the spec
// gives its containers the user's daemon, whose socket is the user's
// alone as outside (in the container's user namespace the user is root,
// so the drop-in's check of who serves the socket passes as it does
// outside).

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rootless is the unprivileged user the rootless tests run as.
type rootless struct {
	name             string
	uid, gid         string
	home, xdg        string
	storage, runroot string
}

// as is the command prefix that runs a program as the user, with its
// environment.
func (r *rootless) as() []string {
	return []string{"setpriv", "--reuid=" + r.uid, "--regid=" + r.gid, "--clear-groups",
		"env", "HOME=" + r.home, "XDG_RUNTIME_DIR=" + r.xdg}
}

// subIDRange is the subordinate range the test gives the user: far above
// the ranges useradd hands out (100000 up), so that it overlaps no real
// user's.
const subIDRange = "3100000:65536"

// newRootless prepares user nobody for rootless podman: directories of its
// own under the test's, and a line in /etc/subuid and /etc/subgid (unless
// it has a range already), removed at the end.
func newRootless(t *testing.T) *rootless {
	t.Helper()
	if _, err := exec.LookPath("newuidmap"); err != nil {
		t.Skip("rootless podman needs newuidmap and newgidmap: apt-get install uidmap")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("the test runs the user's programs with setpriv (util-linux)")
	}
	u, err := user.Lookup("nobody")
	if err != nil || u.Uid == "0" {
		t.Skipf("no unprivileged user nobody to run rootless podman as: %v", err)
	}
	// podman refuses a runroot path longer than 50 characters.
	base, err := os.MkdirTemp("", "rnic-rl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	r := &rootless{name: u.Username, uid: u.Uid, gid: u.Gid, home: filepath.Join(base, "home"), xdg: filepath.Join(base, "run"),
		storage: filepath.Join(base, "storage"), runroot: filepath.Join(base, "runroot")}
	for _, d := range []string{base, r.home, r.xdg} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := exec.Command("chown", r.uid+":"+r.gid, d).Run(); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(base, 0o755)
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		addSubIDs(t, f, r.name)
	}
	// podman's storage holds files of the user's subordinate uids: only
	// the user's own podman can remove them.
	t.Cleanup(func() {
		argv := append(r.as(), "podman", "--root", r.storage, "--runroot", r.runroot, "system", "reset", "--force")
		exec.Command(argv[0], argv[1:]...).Run()
	})
	return r
}

// addSubIDs gives name the test's subordinate range in file, unless it
// has one, and takes it back when the test ends.
func addSubIDs(t *testing.T, file, name string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+":") {
			return
		}
	}
	line := name + ":" + subIDRange + "\n"
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(line)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b, err := os.ReadFile(file)
		if err == nil {
			os.WriteFile(file, []byte(strings.Replace(string(b), line, "", 1)), 0o644)
		}
	})
}

// TestPodmanRootless: as an unprivileged user, with the user's own rnicd:
// ibv_devinfo sees its NIC and the view, and ib_write_bw runs between two
// rootless containers.
func TestPodmanRootless(t *testing.T) {
	e := needPodman(t)
	r := newRootless(t)
	d := e.startRnicd(t, r.as(), r.xdg, []string{"rnic0", "rnic1"}, loopbackAddrs(2))
	e.installSpecs(t, d)
	b0 := box{devices: []string{"rnic.dev/nic=rnic0"}, network: "host", rootless: r}
	b1 := box{devices: []string{"rnic.dev/nic=rnic1"}, network: "host", rootless: r}

	out := e.run(t, b0, "sh", "-c", "ibv_devinfo -d rnic0; ls /dev/infiniband; cat /sys/class/infiniband/rnic0/ports/1/gids/0")
	for _, want := range []string{"hca_id:\trnic0", "PORT_ACTIVE", "rdma_cm\nuverbs0\n" + gidOf(d.addrs[0]) + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the rootless container lacks %q:\n%s", want, out)
		}
	}
	port := freePort(t)
	common := []string{"ib_write_bw", "-p", port, "-x", "0", "-F", "-n", "200"}
	srv := e.start(t, "server", b0, append(common, "-d", "rnic0")...)
	waitTCPListen(t, srv, os.Getpid(), port)
	cli := e.run(t, b1, append(common, "-d", "rnic1", d.addrs[0])...)
	srv.wait(t)
	if !regexp.MustCompile(`(?m)^\s*65536\s+200\s+[\d.]+\s+[\d.]+`).MatchString(cli) {
		t.Errorf("no result row for 65536 bytes, 200 iterations:\n%s", cli)
	}
}
