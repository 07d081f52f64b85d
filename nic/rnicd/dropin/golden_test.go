package dropin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The golden bodies the Go encoder wrote (nic/rnicd/proto/testdata/golden)
// decode in C as in Go: libibverbs' decoders read every field of them as
// written (tests/golden/golden_verbs.c), and both libraries' fuzzers build
// and run, seeded with them, without a fault under AddressSanitizer and
// UBSan.
func TestCGoldenAndFuzzers(t *testing.T) {
	needLibrary(t)
	out := t.TempDir()
	dir := filepath.Join(build.root, "nic/rnicd/dropin")
	runs := []struct{ lib, target, want string }{
		{"libibverbs", "golden", "every golden body decodes"},
		{"libibverbs", "fuzz", "golden seeds), no fault"},
	}
	if _, err := os.Stat("/usr/include/rdma/rdma_cma.h"); err == nil {
		runs = append(runs, struct{ lib, target, want string }{"librdmacm", "fuzz", "golden seeds)"})
	} else {
		t.Log("librdmacm's fuzzer not run: no <rdma/rdma_cma.h> (apt-get install librdmacm-dev)")
	}
	for _, r := range runs {
		b, err := command(filepath.Join(dir, r.lib), "make", "--no-print-directory", "-s", r.target,
			"OUT="+out, "FUZZ_ITERS=3000")
		if err != nil || !strings.Contains(string(b), r.want) {
			t.Fatalf("make -C %s %s: %v\n%s", r.lib, r.target, err, b)
		}
		// Golden files it did not see would be a silent gap.
		if r.target == "fuzz" && strings.Contains(string(b), "(0 golden seeds)") {
			t.Fatalf("make -C %s fuzz found no golden bodies:\n%s", r.lib, b)
		}
	}
}
