package dropin

// rdma-core's own test suite (pyverbs: tests/run_tests.py of rdma-core 44,
// which Debian 12's python3-pyverbs installs as documentation) run on
// rnic0 through rnic exec, as nobody, as a user would run it.

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rdmaCoreTests is where Debian installs the suite (some files gzipped).
const rdmaCoreTests = "/usr/share/doc/rdma-core/tests"

// suiteTimeout bounds the whole suite: about 2 s idle here, most of its
// 273 tests skip (other vendors' devices); generous for a loaded machine.
const suiteTimeout = 3 * time.Minute

// TestRdmaCoreSuite runs the suite and fails on any failed test, any
// error, and any skip for a reason rxe would not skip for
// (rdmacore_skips_test.go). It logs the counts and the skips by reason.
func TestRdmaCoreSuite(t *testing.T) {
	needLibrary(t)
	python := needPyverbs(t)
	dir := copySuite(t)
	d := sharedDaemon(t)
	// PYTHONFAULTHANDLER: a test's forked player that crashes prints
	// "Fatal Python error", which fails the run; the suite itself counts
	// a crashed player as a pass unless the test expects its traffic to
	// fail (base.py's two_nodes_rdmacm_traffic).
	p := d.run(t, "run_tests.py", "", nil, "env", "PYTHONDONTWRITEBYTECODE=1", "PYTHONFAULTHANDLER=1",
		python, filepath.Join(dir, "run_tests.py"), "--dev", "rnic0", "-v")
	p.wait(time.After(suiteTimeout))
	out := p.out.String()
	r := parseUnittest(out)
	if err := r.consistent(); err != nil {
		t.Fatalf("reading the suite's output: %v (%s)\n%s\n%s", err, p.status(), out, d.p.report())
	}
	t.Logf("rdma-core tests on rnic0: %d tests: %d ok, %d failed, %d errors, %d skipped (rxe0: 86 ok, 0 failed, 1 error, 186 skipped)",
		r.ran, r.ok, r.failed, r.errors, r.skipped)
	var unknown []string
	for _, reason := range r.reasons() {
		why, ok := allowedSkip(reason, r.skips[reason])
		if !ok {
			why = "NOT ALLOWED: rxe runs these"
			unknown = append(unknown, fmt.Sprintf("%q: %s", reason, strings.Join(r.skips[reason], ", ")))
		}
		t.Logf("  %3d skipped: %s [%s]", len(r.skips[reason]), reason, why)
	}
	if strings.Contains(out, "Fatal Python error") {
		t.Errorf("a test process crashed (its test may still count as passed)\n%s", out)
	}
	var bad []string
	for _, b := range r.bad {
		if why, known := knownFailures[b]; known {
			t.Logf("  known failure: %s [%s]", b, why)
			continue
		}
		bad = append(bad, b)
	}
	if len(bad) > 0 {
		t.Errorf("%d tests failed: %s\n%s", len(bad), strings.Join(bad, "; "), r.failureBlock)
	}
	if len(unknown) > 0 {
		t.Errorf("skips for reasons rxe would not skip for:\n  %s", strings.Join(unknown, "\n  "))
	}
	if !p.ok() && len(r.bad) == 0 {
		t.Errorf("run_tests.py: %s, with no test failed\n%s", p.status(), out)
	}
}

// needPyverbs returns the python3 that imports pyverbs, and skips when
// there is none or the suite is missing. Debian's python3-pyverbs serves
// the system's /usr/bin/python3, which comes first: the python3 on PATH
// may be another one (pyenv).
func needPyverbs(t *testing.T) string {
	t.Helper()
	const install = "apt-get install python3-pyverbs"
	if _, err := os.Stat(filepath.Join(rdmaCoreTests, "run_tests.py")); err != nil {
		t.Skipf("rdma-core's tests are not in %s: %s (installed as documentation: a dpkg path-exclude of /usr/share/doc, as slim images have, leaves them out)", rdmaCoreTests, install)
	}
	var tried []string
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		out, err := exec.Command(path, "-c", "import pyverbs.device").CombinedOutput()
		if err == nil {
			return path
		}
		tried = append(tried, fmt.Sprintf("%s: %v: %s", path, err, strings.TrimSpace(string(out))))
	}
	t.Skipf("no python3 imports pyverbs (%s): %s", strings.Join(tried, "; "), install)
	return ""
}

// copySuite copies the suite into a directory the programs' user can
// read, decompressing the files Debian gzipped.
func copySuite(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(build.dir, "rdma-core-tests-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ents, err := os.ReadDir(rdmaCoreTests)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			if err := copyTestFile(filepath.Join(rdmaCoreTests, e.Name()), dir); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := readableByAll(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyTestFile copies src into dir, gunzipping a name.py.gz to name.py.
func copyTestFile(src, dir string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	var in io.Reader = f
	name := filepath.Base(src)
	if strings.HasSuffix(name, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		defer z.Close()
		in, name = z, strings.TrimSuffix(name, ".gz")
	}
	out, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("%s: %w", src, err)
	}
	return out.Close()
}
