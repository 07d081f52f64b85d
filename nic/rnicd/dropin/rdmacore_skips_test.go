package dropin

// Why rdma-core's tests may skip on rnic: the reasons they skip for on
// Linux rxe as well (rdma-core v44's suite on Linux 6.1's rxe0, in a lab
// guest: 86 of 273 pass, 186 skip, mostly for mlx5, EFA, device memory and
// ODP; one errors, as 6.1's rxe lacks ATOMIC WRITE), and the few where
// rnic knowingly differs from rxe.
// Any other reason fails TestRdmaCoreSuite: a test that ran on rxe and
// skips on rnic is a capability lost, or a new bug.

import (
	"strings"
	"testing"
)

// rxeSkips are prefixes of skip reasons that rxe gives too: another
// vendor's device, hardware features a software RoCE NIC lacks, and what
// the test machine does not have. ("Rereg MR is not supported", rxe's,
// is not here: rnic re-registers, and its tests must run.)
var rxeSkips = []string{
	"Can not run the test over non MLX5 device",
	"Could not open mlx5 context",
	"Can not run the test over non EFA device",
	"Device memory is not supported",
	"ODP is not supported",
	"Allocating dmabuf is not supported", // no /dev/dri
	"Create XRCD is not supported",
	// raw packet QPs (type 8): rxe refuses them; the suite asks for root
	// first, and runs as nobody here
	"Must be run by root on Ethernet link layer",
	"To Create RAW QP must be done by root on Ethernet link layer",
	"Create Extended CQ is not supported", // completion timestamps
	"Query device real time is not supported",
	"Extended CQ is not supported", // tag matching
	"Parent Domain is not supported on this device",
	"There are no huge pages of size 2M allocated",
	"cuda-python 12.0+ must be installed",
	"PCI device must be passed by the user",
}

// onlyFor restricts a generic reason to the tests it is allowed for; none
// needs it at present (rnic runs test_qp_ex_rc_atomic_write, which rxe
// 6.1 errors on).
var onlyFor = map[string]string{}

// rnicGaps are skips rxe does not have: features rnic does not offer
// yet, each a known difference to close (remove its line when it is).
var rnicGaps = []string{
	"Importing a device is not supported", // ibv_import_device: a context is a daemon session
}

// knownFailures are tests that fail on rnic, each a known difference to
// close (remove its line when it is). Watch for failures hidden: the
// suite counts a crashed player as a pass unless the test expects its
// traffic to fail (every rdma_cm test's forked players crashed once after
// test_fork's ibv_fork_init, whose MADV_DONTFORK left them without heap
// pages; ibv_fork_init is now unneeded, as on Linux 5.13 and later).
var knownFailures = map[string]string{}

// allowedSkip says whether reason is allowed for tests, and why.
func allowedSkip(reason string, tests []string) (why string, ok bool) {
	for _, p := range rxeSkips {
		if !strings.HasPrefix(reason, p) {
			continue
		}
		if only, restricted := onlyFor[p]; restricted && (len(tests) != 1 || tests[0] != only) {
			return "", false
		}
		return "rxe skips too", true
	}
	for _, p := range rnicGaps {
		if strings.HasPrefix(reason, p) {
			return "rnic gap (rxe runs it)", true
		}
	}
	return "", false
}

// TestAllowedSkip: rxe's reasons pass, an unknown one fails (ATOMIC WRITE's
// "Extended QP is not supported" among them: rnic runs that test).
func TestAllowedSkip(t *testing.T) {
	for _, c := range []struct {
		reason string
		tests  []string
		ok     bool
	}{
		{"Can not run the test over non MLX5 device", []string{"a", "b"}, true},
		{"Extended QP is not supported on this device", []string{"tests.test_qpex.QpExTestCase.test_qp_ex_rc_atomic_write"}, false},
		{"Rereg MR is not supported (Errno: 95)", []string{"x"}, false},
		{"Resize CQ is not supported", []string{"x"}, false},
	} {
		if _, ok := allowedSkip(c.reason, c.tests); ok != c.ok {
			t.Errorf("allowedSkip(%q, %v) = %v, want %v", c.reason, c.tests, ok, c.ok)
		}
	}
}
