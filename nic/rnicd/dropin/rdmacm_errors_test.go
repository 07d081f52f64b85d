package dropin

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The error paths of the rdma_cm programs: a server late to listen, a
// connect nobody listens for, the daemon killed mid-connect; the last two
// through the drop-in built with AddressSanitizer.

// lateBind is tests/cm/late_bind.c built as an LD_PRELOAD library that
// holds a process's second rdma_bind_addr for LATE_BIND_MS.
var lateBind builtOnce

func needLateBind(t *testing.T) string {
	t.Helper()
	return lateBind.get(t, func() (string, error) {
		so := filepath.Join(build.dir, "late_bind.so")
		return compile("building late_bind.so", so, false, "gcc", "-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
			"-o", so, "nic/rnicd/dropin/tests/cm/late_bind.c", "-ldl")
	})
}

// TestPerftestRdmaCMLateServer: perftest -R's server binds and listens on
// its port a second time, for the data connection, after telling its
// client to connect. A server late to do so (late_bind.so holds that bind
// 300 ms, as a busy machine's scheduler now and then does) must not get its
// client refused: perftest 4.5's client crashes (SIGSEGV) in its retry
// after a REJECTED, connecting the ids it has just destroyed. The daemon
// holds a connect to a port whose listener its live client closed a moment
// ago until the port is listened on again (2 s at most). No retry here.
func TestPerftestRdmaCMLateServer(t *testing.T) {
	needLibrary(t)
	for _, tr := range transports {
		for _, prog := range []string{"ib_send_bw", "ib_read_bw"} {
			t.Run(tr.name+"/"+prog, func(t *testing.T) {
				needPrograms(t, prog)
				so := needLateBind(t)
				d := sharedDaemonOf(t, tr.kind)
				port := cmPort()
				common := []string{prog, "-R", "-p", port, "-F", "-n", "200"}
				deadline := time.After(programTimeout)
				srv := d.startCMServerEnv(t, deadline, []string{"LD_PRELOAD=" + so, "LATE_BIND_MS=300"},
					append(append([]string{}, common...), "-d", "rnic0")...)
				cli := d.run(t, "client", "", nil, append(append([]string{}, common...), "-d", "rnic1", d.addrs[0])...)
				cli.wait(deadline)
				if !cli.ok() {
					srv.wait(time.After(2 * time.Second))
				}
				srv.wait(deadline)
				if !srv.ok() || !cli.ok() {
					t.Fatalf("a server late to listen again failed its client\n%s\n%s\n%s", srv.report(), cli.report(), d.p.report())
				}
				mustMatch(t, cli, `(?m)^\s*65536\s+200\s+[\d.]+\s+[\d.]+`)
			})
		}
	}
}

// asanPreload is the compiler's libasan.so: an unmodified program loads the
// ASan build of the drop-in only with the ASan runtime preloaded.
var asanPreload struct {
	once sync.Once
	path string
}

// asanProgramEnv is the environment that runs an unmodified program on the
// ASan build of the drop-in libraries. Leaks are not checked: the
// programs' own error paths leak (the library's are, by cm_corners).
func asanProgramEnv(t *testing.T) []string {
	t.Helper()
	asanPreload.once.Do(func() {
		out, err := exec.Command("gcc", "-print-file-name=libasan.so").Output()
		if p := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(p) {
			if _, err := os.Stat(p); err == nil {
				asanPreload.path = p
			}
		}
	})
	if asanPreload.path == "" {
		t.Skip("no libasan.so from gcc to preload into unmodified programs")
	}
	return []string{"RNIC_LIBDIR=" + filepath.Join(build.dir, "lib", "asan"), "LD_PRELOAD=" + asanPreload.path,
		"ASAN_OPTIONS=exitcode=86:abort_on_error=0:detect_leaks=0"}
}

// cmErrorCase is an rdma_cm client whose connect fails: its command line
// (from the server's address, the client's and the port) and what it
// prints when it takes its error path.
type cmErrorCase struct {
	prog string
	argv func(server, client, port string) []string
	says string
}

// mustFailCleanly fails unless p ended by itself, without an ASan report,
// printing what its error path says.
func mustFailCleanly(t *testing.T, p *proc, says string, extra ...string) {
	t.Helper()
	switch {
	case p.killed:
		t.Errorf("%s hung\n%s\n%s", p.name, p.report(), strings.Join(extra, "\n"))
	case p.cmd.ProcessState != nil && p.cmd.ProcessState.ExitCode() == asanExit,
		strings.Contains(p.out.String(), "AddressSanitizer"):
		t.Errorf("%s: AddressSanitizer report\n%s", p.name, p.report())
	case !regexp.MustCompile(says).MatchString(p.out.String()):
		t.Errorf("%s: no %q\n%s\n%s", p.name, says, p.report(), strings.Join(extra, "\n"))
	}
}

// TestCMProgramsNoListenerASan: each rdma_cm client connects to a port
// nobody listens on and takes its error path with the status rxe gives
// (REJECTED, reason 8: invalid service ID; SIDR's status 1 for UD; the
// synchronous API's ECONNREFUSED), with no ASan report and no hang.
func TestCMProgramsNoListenerASan(t *testing.T) {
	needLibrary(t)
	for _, c := range []cmErrorCase{
		{"rping", func(s, c, p string) []string {
			return []string{"rping", "-c", "-v", "-C", "3", "-p", p, "-a", s, "-I", c}
		},
			`cma event RDMA_CM_EVENT_REJECTED, error 8`},
		{"ucmatose", func(s, c, p string) []string {
			return []string{"ucmatose", "-s", s, "-b", c, "-p", p, "-c", "2", "-C", "2"}
		}, `event: RDMA_CM_EVENT_REJECTED, error: 8`},
		{"udaddy", func(s, c, _ string) []string { return []string{"udaddy", "-s", s, "-b", c, "-c", "1", "-C", "1"} },
			`event: RDMA_CM_EVENT_UNREACHABLE, error: 1\b`},
		{"rdma_client", func(s, _, p string) []string { return []string{"rdma_client", "-s", s, "-p", p} },
			`rdma_connect: Connection refused`},
		{"rdma_xclient", func(s, _, p string) []string { return []string{"rdma_xclient", "-s", s, "-p", p, "-c", "r"} },
			`rdma_connect: Connection refused`},
		{"cmtime", func(s, c, p string) []string { return []string{"cmtime", "-s", s, "-b", c, "-p", p, "-c", "4"} },
			`event: RDMA_CM_EVENT_REJECTED, error: 8`},
		{"ib_send_bw", func(s, _, p string) []string { return []string{"ib_send_bw", "-R", "-p", p, "-F", "-d", "rnic1", s} },
			`Unexpected CM event bl blka 8\b`},
	} {
		t.Run(c.prog, func(t *testing.T) {
			needPrograms(t, c.prog)
			env := asanProgramEnv(t)
			d := sharedDaemon(t)
			p := start(t, c.prog, env, nil, append([]string{build.rnic, "exec", "-S", d.socket, "--"},
				c.argv(d.addrs[0], d.addrs[1], cmPort())...)...)
			p.wait(time.After(programTimeout))
			mustFailCleanly(t, p, c.says)
		})
	}
}

// TestCMProgramsDaemonKilledASan: each rdma_cm client connects to an
// address nobody answers from (its REQ retried), and the daemon is killed
// (SIGKILL) meanwhile: DEVICE_REMOVAL, then every call fails, and the
// program ends on its error path within seconds, with no ASan report.
// (cmtime is not among them: it spins until each connect completed, which
// after DEVICE_REMOVAL none does, on rxe neither.)
func TestCMProgramsDaemonKilledASan(t *testing.T) {
	needLibrary(t)
	for _, c := range []cmErrorCase{
		{"rping", func(s, c, p string) []string {
			return []string{"rping", "-c", "-v", "-C", "3", "-p", p, "-a", s, "-I", c}
		},
			`cma detected device removal`},
		{"ucmatose", func(s, c, p string) []string {
			return []string{"ucmatose", "-s", s, "-b", c, "-p", p, "-c", "2", "-C", "2"}
		}, `return status -?[1-9]`},
		{"udaddy", func(s, c, _ string) []string { return []string{"udaddy", "-s", s, "-b", c, "-c", "1", "-C", "1"} },
			`return status -?[1-9]`},
		{"rdma_client", func(s, _, p string) []string { return []string{"rdma_client", "-s", s, "-p", p} },
			`rdma_connect: `},
		{"ib_send_bw", func(s, _, p string) []string { return []string{"ib_send_bw", "-R", "-p", p, "-F", "-d", "rnic1", s} },
			`Unexpected CM event bl blka 11\b`},
	} {
		t.Run(c.prog, func(t *testing.T) {
			needPrograms(t, c.prog)
			env := asanProgramEnv(t)
			var cleanups []func()
			t.Cleanup(func() {
				for i := len(cleanups) - 1; i >= 0; i-- {
					cleanups[i]()
				}
			})
			d, err := startDaemon(func(f func()) { cleanups = append(cleanups, f) }, nicUDP)
			if err != nil {
				t.Fatal(err)
			}
			silent := loopbackAddr() // no NIC there: the REQ is never answered
			p := start(t, c.prog, append(env, "RNIC_CM_TRACE=1"), nil, append([]string{build.rnic, "exec", "-S", d.socket, "--"},
				c.argv(silent, d.addrs[1], cmPort())...)...)
			d.killMidConnect(t, p)
			p.wait(time.After(programTimeout))
			mustFailCleanly(t, p, c.says, d.p.report())
		})
	}
}

// killMidConnect kills d (SIGKILL) once p's connect is on its way: its
// route resolved (the library's trace says so), and a moment for the
// connect to go out.
func (d *daemon) killMidConnect(t *testing.T, p *proc) {
	t.Helper()
	deadline := time.After(programTimeout)
	for !strings.Contains(p.out.String(), "RDMA_CM_EVENT_ROUTE_RESOLVED") {
		select {
		case <-p.done:
			t.Fatalf("%s ended before connecting\n%s\n%s", p.name, p.report(), d.p.report())
		case <-deadline:
			p.kill()
			t.Fatalf("%s did not resolve its route\n%s", p.name, p.report())
		case <-time.After(10 * time.Millisecond):
		}
	}
	time.Sleep(300 * time.Millisecond)
	d.p.cmd.Process.Signal(syscall.SIGKILL)
	<-d.p.done
}
