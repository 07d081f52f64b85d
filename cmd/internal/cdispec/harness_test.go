package cdispec_test

// The container tests' harness: builds rnic, rnicd and the drop-in
// libraries once into a temporary directory, makes a container root file
// system from the host's own verbs programs and their libraries (no image
// registry), starts rnicds, installs their CDI specs where podman reads
// them, and runs podman.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/cmd/internal/cdispec"
)

// programTimeout bounds one container (or a server/client pair): podman's
// start is slow on a busy 2-core machine, a hang must still fail.
const programTimeout = 90 * time.Second

// programs are what the containers run: the host's own, unmodified.
var programs = []string{"sh", "ls", "cat", "ibv_devinfo", "ibv_rc_pingpong", "ib_write_bw", "ib_write_lat", "rping"}

// env is what the first container test prepared, shared by the others.
type env struct {
	root    string // the repository
	dir     string // temporary: bin/, lib/, rootfs/, runs
	rnic    string
	rnicd   string
	lib     string
	rootfs  string
	runtime []string // podman's --runtime flag when its default cannot run here
}

var shared struct {
	once sync.Once
	e    *env
	skip string
	err  error
}

// TestMain removes what the container tests built, once all have run.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared.e != nil {
		os.RemoveAll(shared.e.dir)
	}
	os.Exit(code)
}

// needPodman skips t unless podman can run containers here as root, and
// returns the prepared environment.
func needPodman(t *testing.T) *env {
	t.Helper()
	if raceEnabled {
		t.Skip("not run again under -race: the containers run C programs, checked by the run without -race")
	}
	if testing.Short() {
		t.Skip("-short: podman containers take seconds each")
	}
	if os.Geteuid() != 0 {
		t.Skip("rootful podman needs root; CI runs as root")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed: apt-get install podman")
	}
	for _, p := range append(programs[3:], "make", "gcc") {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed: apt-get install ibverbs-utils perftest rdmacm-utils gcc make", p)
		}
	}
	shared.once.Do(func() { shared.e, shared.skip, shared.err = prepare() })
	if shared.skip != "" {
		t.Skip(shared.skip)
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.e
}

// prepare builds everything and finds a runtime podman can use here.
func prepare() (*env, string, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "rnic-cdi-")
	if err != nil {
		return nil, "", err
	}
	e := &env{root: root, dir: dir, rnic: filepath.Join(dir, "bin", "rnic"), rnicd: filepath.Join(dir, "bin", "rnicd"),
		lib: filepath.Join(dir, "lib"), rootfs: filepath.Join(dir, "rootfs")}
	if err := os.Chmod(dir, 0o755); err != nil { // the rootless user runs what is built
		return e, "", err
	}
	for _, c := range [][2]string{{e.rnic, "./cmd/rnic"}, {e.rnicd, "./cmd/rnicd"}} {
		if out, err := command(root, "go", "build", "-o", c[0], c[1]); err != nil {
			return e, "", fmt.Errorf("go build %s: %v\n%s", c[1], err, out)
		}
	}
	if out, err := command(root, "make", "--no-print-directory", "-s", "lib", "LIBDIR="+e.lib); err != nil {
		return e, "", fmt.Errorf("make lib: %v\n%s", err, out)
	}
	if err := makeRootfs(e.rootfs, programs); err != nil {
		return e, "", err
	}
	skip, err := e.findRuntime()
	return e, skip, err
}

// makeRootfs copies each program and every library ldd says it loads
// into dir, at the same paths: a root file system made of the host's
// files, the libibverbs.so.1 the programs link against included (the
// container's LD_LIBRARY_PATH puts the drop-in before it).
func makeRootfs(dir string, progs []string) error {
	for _, p := range progs {
		path, err := exec.LookPath(p)
		if err != nil {
			return err
		}
		files := []string{path}
		out, err := exec.Command("ldd", path).Output()
		if err != nil {
			return fmt.Errorf("ldd %s: %w", path, err)
		}
		for _, f := range strings.Fields(string(out)) {
			if strings.HasPrefix(f, "/") {
				files = append(files, f)
			}
		}
		for _, f := range files {
			if err := copyResolved(f, filepath.Join(dir, f)); err != nil {
				return err
			}
		}
	}
	// glibc loads libgcc_s when a thread exits (rping's do), not through
	// a link ldd shows.
	if path := sharedLibrary("libgcc_s.so.1"); path != "" {
		if err := copyResolved(path, filepath.Join(dir, path)); err != nil {
			return err
		}
	}
	// Mount points the runtime would otherwise have to make.
	for _, d := range []string{"proc", "sys", "dev", "etc", "tmp", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	// Mount points of podman's and of the spec's binds: a rootless
	// runtime, root only in the container's user namespace, cannot make
	// them in a root file system root owns (an image's, in the user's
	// storage, is the user's).
	if err := os.MkdirAll(filepath.Join(dir, cdispec.ContainerLibDir), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(cdispec.ContainerSocket)), 0o755); err != nil {
		return err
	}
	for _, f := range []string{"etc/resolv.conf", "etc/hosts", "etc/hostname", cdispec.ContainerSocket} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			return err
		}
	}
	return os.Chmod(filepath.Join(dir, "tmp"), 0o1777)
}

// sharedLibrary is where the dynamic linker finds the library name: the
// first of ldconfig -p's entries, the native one; "" if none.
func sharedLibrary(name string) string {
	out, _ := exec.Command("ldconfig", "-p").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == name && f[len(f)-2] == "=>" {
			return f[len(f)-1]
		}
	}
	return ""
}

// copyResolved copies the file src names (symlinks followed) to dst.
func copyResolved(src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// findRuntime runs a trivial container with podman's default runtime,
// then runc: crun refuses a host whose cgroup v2 hierarchy has
// controllers while v1 ones are mounted ("hybrid" mode), runc takes it.
func (e *env) findRuntime() (skip string, err error) {
	var fails []string
	for _, rt := range [][]string{nil, {"--runtime", "runc"}} {
		if len(rt) > 0 {
			if _, err := exec.LookPath(rt[1]); err != nil {
				fails = append(fails, rt[1]+": not installed (apt-get install runc)")
				continue
			}
		}
		e.runtime = rt
		out, err := e.podman(box{}, "sh", "-c", "true").CombinedOutput()
		if err == nil {
			return "", nil
		}
		fails = append(fails, fmt.Sprintf("%s: %v: %s", strings.Join(rt, " "), err, strings.TrimSpace(string(out))))
	}
	return "podman cannot run a container here: " + strings.Join(fails, "; "), nil
}

// box is how a container is run: the CDI devices it is given, its
// network (podman's --network: none when empty) and environment.
type box struct {
	devices  []string
	network  string
	env      []string
	rootless *rootless // podman run by this user, not root
}

// podman returns a podman run of argv in a container of the test's root
// file system, as b says. Resource limits: podman's defaults raise the
// open files and processes limits above the hard ones, which needs
// CAP_SYS_RESOURCE a VM's root may lack; the container keeps small ones.
func (e *env) podman(b box, argv ...string) *exec.Cmd {
	var args []string
	if b.rootless != nil {
		args = append(b.rootless.as(), "podman", "--root", b.rootless.storage, "--runroot", b.rootless.runroot)
	} else {
		args = []string{"podman"}
	}
	args = append(args, e.runtime...)
	args = append(args, "run", "--rm", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096")
	network := b.network
	if network == "" {
		network = "none"
	}
	args = append(args, "--network", network)
	for _, d := range b.devices {
		args = append(args, "--device", d)
	}
	for _, v := range b.env {
		args = append(args, "--env", v)
	}
	args = append(args, "--rootfs", e.rootfs)
	c := exec.Command(args[0], append(args[1:], argv...)...)
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return c
}

// run runs a container to its end and returns its output.
func (e *env) run(t *testing.T, b box, argv ...string) string {
	t.Helper()
	return e.start(t, "container", b, argv...).wait(t)
}

// proc is a process the test started.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start starts a container; the test's end kills it if it still runs.
func (e *env) start(t *testing.T, name string, b box, argv ...string) *proc {
	t.Helper()
	return startProc(t, name, e.podman(b, argv...))
}

func startProc(t *testing.T, name string, c *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: c, done: make(chan struct{})}
	c.Stdout, c.Stderr = &p.out, &p.out
	if err := c.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { p.err = c.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			c.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for p's end and fails t unless it exited 0.
func (p *proc) wait(t *testing.T) string {
	t.Helper()
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("%s: %v\n%s", p.name, p.err, p.out.String())
		}
	case <-time.After(programTimeout):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s did not finish within %v\n%s", p.name, programTimeout, p.out.String())
	}
	return p.out.String()
}

// daemon is an rnicd the test started.
type daemon struct {
	socket string
	addrs  []string
	prefix []string // how it was started: rnic cdi generate asks it the same way
	p      *proc
}

// startRnicd starts an rnicd with a UDP NIC on each address, named as
// names says, its socket in dir (e.dir when empty), prefixed by prefix
// (ip netns exec NS, a user's setpriv, or nothing), and waits until it
// serves them.
func (e *env) startRnicd(t *testing.T, prefix []string, dir string, names, addrs []string) *daemon {
	t.Helper()
	if dir == "" {
		dir = e.dir
	}
	d := &daemon{socket: filepath.Join(dir, fmt.Sprintf("run-%d", rand.Uint32()), "rnicd.sock"), addrs: addrs, prefix: prefix}
	argv := append(append([]string{}, prefix...), e.rnicd, "--socket", d.socket, "--udp", addrs[0], "--name", names[0])
	for i := 1; i < len(addrs); i++ {
		argv = append(argv, "--device", fmt.Sprintf("name=%s,udp=%s", names[i], addrs[i]))
	}
	pr, pw := io.Pipe()
	c := exec.Command(argv[0], argv[1:]...)
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d.p = &proc{name: "rnicd", cmd: c, done: make(chan struct{})}
	c.Stdout, c.Stderr = io.MultiWriter(&d.p.out, pw), &d.p.out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.p.err = c.Wait(); pw.Close(); close(d.p.done) }()
	t.Cleanup(d.stop)
	ready := make(chan bool, 1)
	go func() {
		found := false
		for sc := bufio.NewScanner(pr); sc.Scan(); {
			if !found && strings.HasPrefix(sc.Text(), "rnicd: serving ") {
				found = true
				ready <- true
			}
		}
		if !found {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("rnicd exited before serving: %v\n%s", d.p.err, d.p.out.String())
		}
	case <-time.After(programTimeout):
		t.Fatalf("rnicd not serving within %v\n%s", programTimeout, d.p.out.String())
	}
	return d
}

// stop ends the daemon: SIGTERM, then SIGKILL if it lingers.
func (d *daemon) stop() {
	d.p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.p.done:
	case <-time.After(10 * time.Second):
		d.p.cmd.Process.Kill()
		<-d.p.done
	}
}

// loopbackAddrs returns n distinct random addresses of 127/8 other than
// 127.0.0.1, so parallel runs do not share a RoCEv2 port.
func loopbackAddrs(n int) []string {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		a := fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(254), rand.IntN(256), 1+rand.IntN(254))
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// specDir is where podman 4.3 reads transient specs; it has no flag for
// another directory.
const specDir = "/var/run/cdi"

// installSpecs writes each daemon's spec with rnic cdi generate into
// specDir as rnic-test-N.yaml, holding a lock on the directory so that
// parallel runs do not see each other's NICs, until the test ends.
func (e *env) installSpecs(t *testing.T, ds ...*daemon) {
	t.Helper()
	if err := os.MkdirAll(specDir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(specDir, ".rnic-test.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	others, _ := filepath.Glob(filepath.Join(specDir, "*"))
	for _, o := range others {
		if b, err := os.ReadFile(o); err == nil && strings.Contains(string(b), "kind: rnic.dev/nic") && !strings.Contains(o, "rnic-test-") {
			t.Fatalf("%s already gives rnic.dev/nic devices: the test's, of the same names, would conflict with them", o)
		}
	}
	var written []string
	t.Cleanup(func() {
		for _, w := range written {
			os.Remove(w)
		}
		lock.Close() // releases the lock
	})
	for i, d := range ds {
		path := filepath.Join(specDir, fmt.Sprintf("rnic-test-%d.yaml", i))
		written = append(written, path)
		argv := append(append([]string{}, d.prefix...), e.rnic, "cdi", "generate", "-S", d.socket, "--libdir", e.lib, "-o", "-")
		c := exec.Command(argv[0], argv[1:]...)
		var stderr strings.Builder
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			t.Fatalf("rnic cdi generate: %v\n%s", err, stderr.String())
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// repoRoot is the directory holding go.mod, above this package.
func repoRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("go.mod not found above the test's directory")
		}
		d = up
	}
}

// command runs a build step in dir and returns its combined output.
func command(dir, name string, args ...string) ([]byte, error) {
	c := exec.Command(name, args...)
	c.Dir = dir
	return c.CombinedOutput()
}
