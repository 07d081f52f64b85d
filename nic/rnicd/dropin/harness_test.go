package dropin

// The harness: builds rnicd, rnic and the library once (TestMain), runs
// one unprivileged rnicd with two NICs on loopback addresses, and runs
// programs on it through rnic exec, as nobody when the test runs as root.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/porttest"
)

// programTimeout bounds one program (or a server/client pair): generous
// for a contended CI machine, short enough that a hang fails fast.
const programTimeout = 60 * time.Second

// build is what TestMain prepared, shared by every test.
var build struct {
	root    string // the repository
	dir     string // temporary: bin/, lib/, lib/asan/, corners, run/
	rnic    string // bin/rnic (finds lib/ beside bin/)
	rnicd   string // bin/rnicd
	skip    string // why the library tests cannot run here, if they cannot
	libErr  string // the library's build failed: its output
	uid     int    // who the daemon and programs run as
	gid     int
	dropped bool   // running as root: daemon and programs run as nobody
	viewDir string // RNIC_VIEW_DIR of the programs (nic/view)
}

func TestMain(m *testing.M) {
	if raceEnabled {
		// make test runs every package under -race a second time; the
		// programs here are C, and the first run ran them.
		fmt.Println("dropin: not run again under -race: its tests drive C programs, run by make test without -race")
		os.Exit(0)
	}
	code, err := setUp()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dropin: %v\n", err)
		os.Exit(1)
	}
	if code == 0 {
		code = m.Run()
	}
	stopSharedDaemon()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// setUp builds everything into a temporary directory the programs' user
// can read. Missing tools make build.skip say what to install; a library
// that does not compile makes build.libErr hold why (every test fails).
func setUp() (int, error) {
	root, err := repoRoot()
	if err != nil {
		return 1, err
	}
	build.root = root
	build.uid, build.gid = os.Getuid(), os.Getgid()
	if build.uid == 0 {
		if err := dropTo(); err != nil {
			return 1, err
		}
	}
	dir, err := os.MkdirTemp("", "rnic-dropin-")
	if err != nil {
		return 1, err
	}
	build.dir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		return 1, err
	}
	build.rnic, build.rnicd = filepath.Join(dir, "bin", "rnic"), filepath.Join(dir, "bin", "rnicd")
	for _, c := range [][2]string{{build.rnic, "./cmd/rnic"}, {build.rnicd, "./cmd/rnicd"}} {
		if out, err := command(root, "go", "build", "-o", c[0], c[1]); err != nil {
			return 1, fmt.Errorf("go build %s: %v\n%s", c[1], err, out)
		}
	}
	buildLibrary()
	if err := readableByAll(dir); err != nil {
		return 1, err
	}
	// rnic exec's views keep their locks and pid files here, gone with
	// the rest (a view directory must be its user's alone: made after
	// readableByAll).
	build.viewDir, err = userDir(dir, "view")
	return 0, err
}

// readableByAll lets the programs' user read and run what was built
// under dir, whatever the umask the build ran with.
func readableByAll(dir string) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil || d.Type()&os.ModeSymlink != 0 {
			return err
		}
		add := os.FileMode(0o044)
		if d.IsDir() || fi.Mode()&0o100 != 0 {
			add = 0o055
		}
		return os.Chmod(path, fi.Mode().Perm()|add)
	})
}

// buildLibrary runs make lib and lib-asan into the temporary directory.
func buildLibrary() {
	if _, err := exec.LookPath("gcc"); err != nil {
		build.skip = "no gcc to build the drop-in libibverbs: apt-get install gcc libibverbs-dev"
		return
	}
	if _, err := os.Stat("/usr/include/infiniband/verbs.h"); err != nil {
		build.skip = "no <infiniband/verbs.h> to build the drop-in libibverbs: apt-get install libibverbs-dev"
		return
	}
	if _, err := exec.LookPath("make"); err != nil {
		build.skip = "no make to build the drop-in libibverbs: apt-get install make"
		return
	}
	out, err := command(build.root, "make", "--no-print-directory", "-s", "lib", "lib-asan", "LIBDIR="+filepath.Join(build.dir, "lib"))
	if err != nil {
		build.libErr = fmt.Sprintf("make lib lib-asan: %v\n%s", err, out)
	}
}

// needLibrary skips when the library cannot be built here, saying what to
// install, and fails when it does not compile.
func needLibrary(t testing.TB) {
	t.Helper()
	if build.skip != "" {
		t.Skip(build.skip)
	}
	if build.libErr != "" {
		t.Fatal(build.libErr)
	}
}

// needPrograms skips when a Debian program is not installed.
func needPrograms(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s is not installed: apt-get install ibverbs-utils perftest", n)
		}
	}
}

// dropTo makes build.uid/gid nobody's (root runs everything as nobody, so
// the library is tested as the unprivileged user it is for).
func dropTo() error {
	u, err := user.Lookup("nobody")
	if err != nil {
		return fmt.Errorf("running as root needs user nobody: %w", err)
	}
	build.uid, _ = strconv.Atoi(u.Uid)
	build.gid, _ = strconv.Atoi(u.Gid)
	build.dropped = true
	return nil
}

// userCommand is argv run as the programs' user (as setpriv --reuid
// --regid --clear-groups would), killed if the test dies first.
func userCommand(argv []string) *exec.Cmd {
	c := exec.Command(argv[0], argv[1:]...)
	// The credentials change before the death signal is set, so it holds.
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if build.dropped {
		c.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(build.uid), Gid: uint32(build.gid), Groups: []uint32{}}
	}
	return c
}

// userDir makes a directory owned by the programs' user, mode 0700.
func userDir(parent, name string) (string, error) {
	d := filepath.Join(parent, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", err
	}
	return d, os.Chown(d, build.uid, build.gid)
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

// builtOnce is a program or library of the tests, built by the first test
// that needs it; a failed build fails that test and every later one.
type builtOnce struct {
	once sync.Once
	path string
	err  error
}

// get returns what mk builds, running mk the first time.
func (b *builtOnce) get(t testing.TB, mk func() (string, error)) string {
	t.Helper()
	b.once.Do(func() { b.path, b.err = mk() })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// compile runs a compiler (cc and its arguments) in the repository's root
// to build out; what names the build in its error, with the compiler's
// output. executable makes out runnable by every user, whatever the umask.
func compile(what, out string, executable bool, cc string, args ...string) (string, error) {
	if b, err := command(build.root, cc, args...); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", what, err, b)
	}
	if executable {
		if err := os.Chmod(out, 0o755); err != nil {
			return "", err
		}
	}
	return out, nil
}

// loopbackAddr returns a random address of 127/8 other than 127.0.0.1,
// so parallel test runs do not share a RoCEv2 port.
func loopbackAddr() string {
	return fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(254), rand.IntN(256), 1+rand.IntN(254))
}

// freeTCPPort returns a TCP port free a moment ago, below the ephemeral
// range (porttest.FreePort), for a program's side channel (servers listen
// on every address).
func freeTCPPort(t testing.TB) int {
	t.Helper()
	p, err := porttest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// listening reports whether a TCP socket listens on port (any address)
// in the network namespace of process pid (rnic exec runs programs in a
// view of their own: /proc/net is this process's namespace), read from
// /proc so that no probe connection disturbs a one-client server.
func listening(pid, port int) bool {
	want := fmt.Sprintf(":%04X ", port)
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) > 3 && fields[3] == "0A" && strings.HasSuffix(fields[1]+" ", want) {
				return true
			}
		}
	}
	return false
}

// proc is a started program: its output, and its end.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    *syncBuffer
	done   chan struct{}
	err    error
	killed bool
}

// syncBuffer is an output buffer safe to read while the program writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

// start starts argv (as the programs' user) with env added to the
// test's environment; stdout and stderr go to one buffer.
func start(t testing.TB, name string, env []string, stdin io.Reader, argv ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: userCommand(argv), out: new(syncBuffer), done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), "RNIC_VIEW_DIR="+build.viewDir), env...)
	p.cmd.Stdout, p.cmd.Stderr, p.cmd.Stdin = p.out, p.out, stdin
	p.cmd.Dir = build.dir
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	return p
}

// kill ends the program if it still runs (by its PID: rnic exec execs it).
func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		p.killed = true
		p.cmd.Process.Kill()
		<-p.done
	}
}

// wait waits for the program until deadline, killing it then.
func (p *proc) wait(deadline <-chan time.Time) {
	select {
	case <-p.done:
	case <-deadline:
		p.kill()
	}
}

// status describes how the program ended, for failure messages.
func (p *proc) status() string {
	switch {
	case p.killed:
		return "killed after the timeout (hung)"
	case p.err == nil:
		return "exit 0"
	}
	return p.err.Error()
}

func (p *proc) ok() bool { return !p.killed && p.err == nil }

// report is the program's command line, status and output.
func (p *proc) report() string {
	return fmt.Sprintf("--- %s (uid %d): %s: %s\n%s", p.name, build.uid, strings.Join(p.cmd.Args, " "), p.status(), p.out.String())
}

// daemon is a running rnicd with two NICs.
type daemon struct {
	p      *proc
	socket string
	addrs  [2]string // rnic0's and rnic1's IPv4 addresses
}

// shared holds the daemons the program tests share, one per kind of NIC.
var shared struct {
	mu       sync.Mutex
	d        map[string]*daemon
	err      map[string]error
	cleanups []func()
}

// sharedDaemon is the RoCEv2 daemon every program test uses, started on
// first use and stopped after the last test.
func sharedDaemon(t *testing.T) *daemon { return sharedDaemonOf(t, nicUDP) }

// sharedDaemonOf is the shared daemon whose NICs are of kind (nicUDP,
// nicTCP), started on first use.
func sharedDaemonOf(t *testing.T, kind string) *daemon {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.d == nil {
		shared.d, shared.err = map[string]*daemon{}, map[string]error{}
	}
	if shared.d[kind] == nil && shared.err[kind] == nil {
		shared.d[kind], shared.err[kind] = startDaemon(func(f func()) { shared.cleanups = append(shared.cleanups, f) }, kind)
	}
	if err := shared.err[kind]; err != nil {
		t.Fatal(err)
	}
	return shared.d[kind]
}

func stopSharedDaemon() {
	for i := len(shared.cleanups) - 1; i >= 0; i-- {
		shared.cleanups[i]()
	}
}

// transports are the kinds of NIC the rdma_cm programs run over, by the
// name their subtests take.
var transports = []struct{ name, kind string }{{"roce", nicUDP}, {"iwarp", nicTCP}}

// The kinds of NIC a test daemon serves: the flag (and --device key) that
// makes one.
const (
	nicUDP = "udp" // RoCEv2 over kernel UDP
	nicTCP = "tcp" // iWARP over kernel TCP
)

// startDaemon starts rnicd --udp (or --tcp: kind) with NICs rnic0 and
// rnic1 on two fresh loopback addresses, as the programs' user, with no
// --socket: the default rule puts the socket in $XDG_RUNTIME_DIR/rnic/
// (the rule an unprivileged daemon follows), which is checked too.
func startDaemon(cleanup func(func()), kind string, flags ...string) (*daemon, error) {
	var last error
	for range 5 { // an address in use by a parallel run: try others
		d, err := tryDaemon(cleanup, kind, flags...)
		if err == nil {
			return d, nil
		}
		last = err
	}
	return nil, last
}

func tryDaemon(cleanup func(func()), kind string, flags ...string) (*daemon, error) {
	xdg, err := userDir(build.dir, fmt.Sprintf("run-%d", rand.Uint32()))
	if err != nil {
		return nil, err
	}
	d := &daemon{socket: filepath.Join(xdg, "rnic", "rnicd.sock"), addrs: [2]string{loopbackAddr(), loopbackAddr()}}
	if d.addrs[0] == d.addrs[1] {
		return nil, errors.New("same address twice")
	}
	stdout, w := io.Pipe()
	argv := append([]string{build.rnicd, "--" + kind, d.addrs[0], "--device", "name=rnic1," + kind + "=" + d.addrs[1]}, flags...)
	d.p = &proc{name: "rnicd", cmd: userCommand(argv),
		out: new(syncBuffer), done: make(chan struct{})}
	env := []string{"XDG_RUNTIME_DIR=" + xdg}
	if build.uid == 0 { // only when not dropping: root ignores XDG_RUNTIME_DIR
		env = append(env, "RNIC_SOCKET="+d.socket)
	}
	d.p.cmd.Env = append(withoutEnv(os.Environ(), "RNIC_SOCKET"), env...)
	return d, d.launch(cleanup, stdout, w, "rnicd: serving rnic0, rnic1 on "+d.socket)
}

// launch starts the daemon's command, whose output goes to w (the write end of
// stdout) besides its log, and waits until it prints the line starting with
// ready (or fails, or programTimeout passes).
func (d *daemon) launch(cleanup func(func()), stdout io.Reader, w io.WriteCloser, ready string) error {
	d.p.cmd.Stdout, d.p.cmd.Stderr = io.MultiWriter(d.p.out, w), d.p.out
	if err := d.p.cmd.Start(); err != nil {
		return err
	}
	go func() { d.p.err = d.p.cmd.Wait(); w.Close(); close(d.p.done) }()
	cleanup(d.stop)
	served := make(chan bool, 1)
	go func() {
		found := false
		for sc := bufio.NewScanner(stdout); sc.Scan(); {
			if !found && strings.HasPrefix(sc.Text(), ready) {
				found = true
				served <- true
			}
		}
		if !found {
			served <- false
		}
	}()
	select {
	case ok := <-served:
		if ok {
			return nil
		}
	case <-time.After(programTimeout):
		d.p.kill()
	}
	d.p.wait(time.After(programTimeout))
	return fmt.Errorf("rnicd did not print %q:\n%s", ready, d.p.report())
}

// stop ends the daemon with SIGTERM, as a user would, then SIGKILL.
func (d *daemon) stop() {
	d.p.cmd.Process.Signal(syscall.SIGTERM)
	d.p.wait(time.After(10 * time.Second))
}

// withoutEnv returns env without key.
func withoutEnv(env []string, key string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, key+"=") {
			out = append(out, e)
		}
	}
	return out
}

// run starts argv through rnic exec on the daemon; lib selects the
// library's directory (empty: the one beside rnic, found by rnic exec).
func (d *daemon) run(t testing.TB, name, lib string, stdin io.Reader, argv ...string) *proc {
	t.Helper()
	var env []string
	if lib != "" {
		env = append(env, "RNIC_LIBDIR="+lib)
	}
	return start(t, name, env, stdin, append([]string{build.rnic, "exec", "-S", d.socket, "--"}, argv...)...)
}

// runEnv starts argv through rnic exec on the daemon with env added to
// the test's environment.
func (d *daemon) runEnv(t testing.TB, name string, env []string, argv ...string) *proc {
	t.Helper()
	return start(t, name, env, nil, append([]string{build.rnic, "exec", "-S", d.socket, "--"}, argv...)...)
}

// lineBuffered runs a Debian program with its stdout line-buffered
// (coreutils' stdbuf), so that the output of one killed after a hang is
// not lost in its stdio buffer.
func lineBuffered(argv []string) []string {
	if _, err := exec.LookPath("stdbuf"); err != nil {
		return argv
	}
	return append([]string{"stdbuf", "-oL", "-eL"}, argv...)
}

// runOne runs one program to its end and returns it.
func (d *daemon) runOne(t *testing.T, argv ...string) *proc {
	t.Helper()
	p := d.run(t, argv[0], "", nil, lineBuffered(argv)...)
	p.wait(time.After(programTimeout))
	return p
}

// runPair runs a server (on rnic0) until it listens on port, then its
// client (on rnic1), both bounded by one timeout; it fails the test with
// both outputs unless both exit 0.
func (d *daemon) runPair(t *testing.T, port int, server, client []string) (srv, cli *proc) {
	t.Helper()
	return d.runPairEnv(t, port, nil, server, nil, client)
}

// runPairEnv is runPair with environment variables added to the server's
// and the client's (srvEnv, cliEnv).
func (d *daemon) runPairEnv(t *testing.T, port int, srvEnv, server, cliEnv, client []string) (srv, cli *proc) {
	t.Helper()
	srv, cli = d.tryPairEnv(t, port, srvEnv, server, cliEnv, client)
	if !srv.ok() || !cli.ok() {
		t.Fatal(d.pairFailure(srv, cli))
	}
	return srv, cli
}

// pairFailure is the report of a failed server/client pair.
func (d *daemon) pairFailure(srv, cli *proc) string {
	return fmt.Sprintf("server/client pair failed\n%s\n%s\n%s", srv.report(), cli.report(), d.p.report())
}

// tryPairEnv is runPairEnv that returns a pair that failed too (the
// server not listening still ends the test).
func (d *daemon) tryPairEnv(t *testing.T, port int, srvEnv, server, cliEnv, client []string) (srv, cli *proc) {
	t.Helper()
	deadline := time.After(programTimeout)
	srv = d.runEnv(t, "server", srvEnv, lineBuffered(server)...)
	for !listening(srv.cmd.Process.Pid, port) {
		select {
		case <-srv.done:
			t.Fatalf("the server ended before listening on port %d\n%s", port, srv.report())
		case <-deadline:
			srv.kill()
			t.Fatalf("the server did not listen on port %d\n%s", port, srv.report())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cli = d.runEnv(t, "client", cliEnv, lineBuffered(client)...)
	cli.wait(deadline)
	if !cli.ok() {
		// A failed client leaves the server waiting: end it now.
		srv.wait(time.After(2 * time.Second))
	}
	srv.wait(deadline)
	return srv, cli
}
