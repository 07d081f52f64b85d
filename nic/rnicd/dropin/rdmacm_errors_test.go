package dropin

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The error paths of the rdma_cm programs: a server late to listen.

// lateBind is tests/cm/late_bind.c built as an LD_PRELOAD library that
// holds a process's second rdma_bind_addr for LATE_BIND_MS.
var lateBind struct {
	once   sync.Once
	so     string
	failed string
}

func needLateBind(t *testing.T) string {
	t.Helper()
	lateBind.once.Do(func() {
		so := filepath.Join(build.dir, "late_bind.so")
		out, err := command(build.root, "gcc", "-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
			"-o", so, "nic/rnicd/dropin/tests/cm/late_bind.c", "-ldl")
		if err != nil {
			lateBind.failed = "building late_bind.so: " + err.Error() + "\n" + string(out)
			return
		}
		lateBind.so = so
	})
	if lateBind.failed != "" {
		t.Fatal(lateBind.failed)
	}
	return lateBind.so
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
