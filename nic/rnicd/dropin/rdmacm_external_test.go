package dropin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The external-QP test (tests/cm/external_qp.c), built with -Wall -Wextra
// -Werror and AddressSanitizer against the system's librdmacm.so and run
// on the ASan build of the drop-in libraries.
var externalQP builtOnce

// TestCMExternalQP: both roles of rdma_cm with the program's own QPs
// (conn_param.qp_num, no id->qp): CONNECT_RESPONSE and rdma_establish on
// the active side, rdma_accept after the program's RTR and RTS on the
// passive side, rdma_init_qp_attr's attributes pairing up, traffic both
// ways, the CM moving neither QP, a qp_num of no QP refused. On iWARP
// rdma_connect refuses an external QP with EOPNOTSUPP (rnic's iWARP CM
// takes none).
func TestCMExternalQP(t *testing.T) {
	needLibrary(t)
	if _, err := os.Stat("/usr/include/rdma/rdma_cma.h"); err != nil {
		t.Skip("no <rdma/rdma_cma.h> to build the test: apt-get install librdmacm-dev")
	}
	bin := externalQP.get(t, func() (string, error) {
		bin := filepath.Join(build.dir, "external_qp")
		return compile("building the external-QP test", bin, false, "gcc", "-std=gnu11", "-g", "-O1", "-Wall", "-Wextra", "-Werror",
			"-fsanitize=address", "-fno-omit-frame-pointer", "-o", bin, "nic/rnicd/dropin/tests/cm/external_qp.c",
			"-lrdmacm", "-libverbs")
	})
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			d := sharedDaemonOf(t, tr.kind)
			env := []string{"RNIC_LIBDIR=" + filepath.Join(build.dir, "lib", "asan"), asanOptions("external_qp")}
			p := start(t, "external_qp", env, nil, build.rnic, "exec", "-S", d.socket, "--", bin, d.addrs[0], d.addrs[1])
			finish(t, p, d.p.report())
			want := "ok client: RDMA_CM_EVENT_CONNECT_RESPONSE"
			if tr.kind == nicTCP {
				want = "ok iWARP: rdma_connect with an external QP: EOPNOTSUPP"
			}
			if out := p.out.String(); !strings.Contains(out, want) {
				t.Errorf("no %q\n%s", want, out)
			}
		})
	}
}
