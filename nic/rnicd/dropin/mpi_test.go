package dropin

// Open MPI (Debian 12's 4.1.4) with its UCX PML on rnic: our ping-pong
// (tests/mpi/pingpong.c, built with mpicc) between two ranks, each on its
// own NIC, every message checked, mpirun itself run through rnic exec so
// that the ranks it starts inherit the library and the device's view.

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// mpiEnv is what Open MPI on a software RoCE device needs, rxe's as
// rnic's: Debian's openmpi-mca-params.conf excludes the UCX PML
// (pml = ^ucx), and the UCX PML takes only mlx devices unless
// pml_ucx_devices is any. UCX_TLS=rc_v: rc_verbs for the data, ud_verbs
// only for wire-up (no shared memory between the two local ranks, which
// would bypass the NICs); UCX_LOG_LEVEL=info makes each rank say which
// transport and device it chose.
var mpiEnv = []string{
	"OMPI_MCA_pml=ucx",
	"OMPI_MCA_pml_ucx_devices=any",
	"UCX_TLS=rc_v",
	"UCX_LOG_LEVEL=info",
}

// pingpong is the ping-pong program, built once.
var pingpong builtOnce

// needPingpong skips without Open MPI and returns the built program.
func needPingpong(t *testing.T) string {
	t.Helper()
	for _, n := range []string{"mpicc", "mpirun"} {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s is not installed: apt-get install openmpi-bin libopenmpi-dev", n)
		}
	}
	return pingpong.get(t, func() (string, error) {
		bin := filepath.Join(build.dir, "pingpong")
		src := filepath.Join(build.root, "nic/rnicd/dropin/tests/mpi/pingpong.c")
		return compile("mpicc pingpong.c", bin, true, "mpicc", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", bin, src)
	})
}

// TestMPIPingPong: two ranks, rank 0 on rnic0 and rank 1 on rnic1
// (UCX_NET_DEVICES per rank, in mpirun's app contexts), the UCX PML over
// rc_verbs, messages of 1 B to 4 MiB checked both ways.
func TestMPIPingPong(t *testing.T) {
	needUCXTools(t)
	pp := needPingpong(t)
	d := sharedDaemon(t)
	needUCXDevices(t, d)
	rank := func(dev string) []string {
		return []string{"-np", "1", "env", "UCX_NET_DEVICES=" + dev + ":1", pp}
	}
	// --oversubscribe: two ranks on a machine that may have one core
	// (mpirun refuses more ranks than cores without it). As nobody it needs
	// nothing else: no HOME (an unreadable or unset one does), no plm.
	argv := append([]string{"mpirun", "--oversubscribe"}, rank("rnic0")...)
	argv = append(append(argv, ":"), rank("rnic1")...)
	p := d.runEnv(t, "mpirun", mpiEnv, argv...)
	p.wait(time.After(programTimeout))
	out := p.out.String()
	if !p.ok() || !strings.Contains(out, "pingpong: ok, 23 sizes") {
		t.Fatalf("the ping-pong failed\n%s\n%s", p.report(), d.p.report())
	}
	for _, dev := range []string{"rnic0", "rnic1"} {
		if want := "tag(rc_verbs/" + dev + ":1)"; !strings.Contains(out, want) {
			t.Errorf("no rank says it chose %s\n%s", want, p.report())
		}
	}
	for _, re := range []string{`latency 8 B: .*`, `bandwidth 4194304 B: .*`} {
		t.Log(regexp.MustCompile(re).FindString(out))
	}
}
