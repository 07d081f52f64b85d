package dropin

// Reading the verbose output of Python's unittest (run_tests.py -v): one
// outcome per test, the summary line, and the failure reports.

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// suiteResult is what one run of a unittest suite gave.
type suiteResult struct {
	ok, failed, errors, skipped int
	expectedFail, unexpectedOK  int
	skips                       map[string][]string // reason -> tests
	bad                         []string            // tests that failed or errored
	ran                         int                 // "Ran N tests"
	summary                     string              // the last line: "OK (skipped=3)", "FAILED (...)"
	failureBlock                string              // the reports of failures and errors
}

var (
	// A test's name line: "test_x (tests.mod.Class.test_x)", its docstring
	// and outcome may follow on the same line or the next.
	testLine = regexp.MustCompile(`^(\w+) \(([\w.]+)\)`)
	// An outcome ends a line: after " ... ", or alone at the start of a
	// line when the test printed something after the dots.
	outcomeLine = regexp.MustCompile(`(?:^|\.\.\. )(ok|FAIL|ERROR|expected failure|unexpected success|skipped '(.*)'|skipped "(.*)")$`)
	ranLine     = regexp.MustCompile(`^Ran (\d+) tests? in `)
	summaryLine = regexp.MustCompile(`^(OK|FAILED)( \(.*\))?$`)
	summaryItem = regexp.MustCompile(`(failures|errors|skipped|expected failures|unexpected successes)=(\d+)`)
)

// parseUnittest reads unittest's verbose output.
func parseUnittest(out string) suiteResult {
	r := suiteResult{skips: map[string][]string{}}
	current := ""
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, "======") && r.failureBlock == "" {
			r.failureBlock = strings.Join(lines[i:], "\n")
		}
		if m := testLine.FindStringSubmatch(line); m != nil {
			current = m[2]
		}
		if m := ranLine.FindStringSubmatch(line); m != nil {
			r.ran, _ = strconv.Atoi(m[1])
		}
		if summaryLine.MatchString(line) {
			r.summary = line
		}
		// The failure reports and the summary follow the last outcome.
		if m := outcomeLine.FindStringSubmatch(line); m != nil && r.failureBlock == "" && r.ran == 0 {
			r.count(current, m)
			current = ""
		}
	}
	return r
}

// count adds one outcome of test (m: outcomeLine's submatches).
func (r *suiteResult) count(test string, m []string) {
	switch {
	case m[1] == "ok":
		r.ok++
	case m[1] == "FAIL":
		r.failed++
		r.bad = append(r.bad, "FAIL "+test)
	case m[1] == "ERROR":
		r.errors++
		r.bad = append(r.bad, "ERROR "+test)
	case m[1] == "expected failure":
		r.expectedFail++
	case m[1] == "unexpected success":
		r.unexpectedOK++
		r.bad = append(r.bad, "unexpected success "+test)
	default:
		reason := m[2] + m[3]
		r.skipped++
		r.skips[reason] = append(r.skips[reason], test)
	}
}

// total is the outcomes read.
func (r *suiteResult) total() int {
	return r.ok + r.failed + r.errors + r.skipped + r.expectedFail + r.unexpectedOK
}

// consistent checks the outcomes read against unittest's own count and
// summary, so that a line the parser missed cannot go unnoticed.
func (r *suiteResult) consistent() error {
	if r.summary == "" || r.ran == 0 {
		return fmt.Errorf("no summary (Ran N tests, OK/FAILED): the suite did not finish")
	}
	if r.total() != r.ran {
		return fmt.Errorf("read %d outcomes, unittest ran %d tests", r.total(), r.ran)
	}
	want := map[string]int{"failures": r.failed, "errors": r.errors, "skipped": r.skipped,
		"expected failures": r.expectedFail, "unexpected successes": r.unexpectedOK}
	said := map[string]int{}
	for _, m := range summaryItem.FindAllStringSubmatch(r.summary, -1) {
		said[m[1]], _ = strconv.Atoi(m[2])
	}
	for k, n := range want {
		if said[k] != n {
			return fmt.Errorf("read %d %s, the summary %q says %d", n, k, r.summary, said[k])
		}
	}
	return nil
}

// reasons are the skip reasons, most frequent first.
func (r *suiteResult) reasons() []string {
	var out []string
	for k := range r.skips {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := len(r.skips[out[i]]), len(r.skips[out[j]])
		return a > b || a == b && out[i] < out[j]
	})
	return out
}

// TestParseUnittest: the parser reads outcomes on the name line, on the
// docstring line, after a test's own output, and alone on a line, and
// checks them against the summary.
func TestParseUnittest(t *testing.T) {
	out := `test_a (tests.m.C.test_a) ... ok
test_b (tests.m.C.test_b)
Docstring of b ... skipped 'No ODP caps'
test_c (tests.m.C.test_c) ... printed by c = 1
ok
test_d (tests.m.C.test_d) ... skipped "Device rnic0 doesn't have net interface"
test_e (tests.m.C.test_e)
Docstring ... FAIL
test_f (tests.m.C.test_f) ... ERROR

======================================================================
FAIL: test_e (tests.m.C.test_e)
----------------------------------------------------------------------
AssertionError: 1 != 0 ... ok

----------------------------------------------------------------------
Ran 6 tests in 0.1s

FAILED (failures=1, errors=1, skipped=2)
`
	r := parseUnittest(out)
	if err := r.consistent(); err != nil {
		t.Fatal(err)
	}
	if r.ok != 2 || r.failed != 1 || r.errors != 1 || r.skipped != 2 {
		t.Fatalf("ok %d failed %d errors %d skipped %d, want 2 1 1 2", r.ok, r.failed, r.errors, r.skipped)
	}
	if got := r.skips["Device rnic0 doesn't have net interface"]; len(got) != 1 || got[0] != "tests.m.C.test_d" {
		t.Fatalf("skips %v", r.skips)
	}
	if strings.Join(r.bad, ",") != "FAIL tests.m.C.test_e,ERROR tests.m.C.test_f" {
		t.Fatalf("bad %v", r.bad)
	}
	if !strings.Contains(r.failureBlock, "AssertionError") {
		t.Fatalf("failure block %q", r.failureBlock)
	}
	short := parseUnittest(strings.Replace(out, "test_a (tests.m.C.test_a) ... ok\n", "", 1))
	if short.consistent() == nil {
		t.Fatal("an outcome missing from the output went unnoticed")
	}
}
