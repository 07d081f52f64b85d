// Reading a Go test binary's -test.v output, for the passthrough test rows:
// what passed, failed and skipped at the top level, and whether the tests
// that need the guest's RDMA device did run. A binary that finds no device
// skips them and still says PASS, so the exit code alone proves nothing.

package main

import (
	"fmt"
	"strings"
)

// TestOutput is what one run of a test binary reported.
type TestOutput struct {
	Passed, Failed, Skipped int             // top-level tests
	passed                  map[string]bool // top-level tests that passed
	failed                  []string
	Verdict                 bool // the closing "PASS" line
}

// ParseTestOutput reads -test.v output. Subtests (indented result lines)
// are left out: the top-level test carries their verdict.
func ParseTestOutput(out string) TestOutput {
	to := TestOutput{passed: map[string]bool{}}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case line == "PASS":
			to.Verdict = true
		case strings.HasPrefix(line, "--- PASS: "):
			to.Passed++
			to.passed[testName(line)] = true
		case strings.HasPrefix(line, "--- FAIL: "):
			to.Failed++
			to.failed = append(to.failed, testName(line))
		case strings.HasPrefix(line, "--- SKIP: "):
			to.Skipped++
		}
	}
	return to
}

// testName is the test a result line names ("--- PASS: TestX (0.01s)").
func testName(line string) string {
	f := strings.Fields(line)
	if len(f) < 3 {
		return ""
	}
	return f[2]
}

// requiredTests must pass in a guest: they need its device (and skip
// without one). The manually connected conformance suite needs RoCE:
// iWARP QPs connect only through rdma_cm.
func requiredTests(iwarp bool) []string {
	if iwarp {
		return []string{"TestConformanceCM", "TestCMLoopback", "TestRDMA"}
	}
	return []string{"TestConformance", "TestConformanceCM", "TestCMLoopback", "TestRDMA"}
}

// Problem is the run's verdict: empty when it passed and the device tests
// ran.
func (to TestOutput) Problem(iwarp bool) string {
	var p []string
	if to.Failed > 0 {
		p = append(p, fmt.Sprintf("%d failed: %s", to.Failed, strings.Join(to.failed, ", ")))
	}
	if !to.Verdict {
		p = append(p, "no PASS line")
	}
	var missing []string
	for _, name := range requiredTests(iwarp) {
		if !to.passed[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		p = append(p, "did not pass (no device?): "+strings.Join(missing, ", "))
	}
	return strings.Join(p, "; ")
}

// FirstFailure is the first line of out that says what went wrong: a
// panic or a data race, else the first message a failed test logged (-test.v
// prints a test's messages after its "=== RUN" or "=== CONT" line), else
// the last line.
func (to TestOutput) FirstFailure(out string) string {
	lines := strings.Split(out, "\n")
	failed := map[string]bool{}
	for _, line := range lines {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "--- FAIL: ") {
			failed[testName(t)] = true
		}
	}
	current := ""
	for _, line := range lines {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "panic:") || strings.HasPrefix(t, "WARNING: DATA RACE"):
			return t
		case strings.HasPrefix(t, "=== RUN") || strings.HasPrefix(t, "=== CONT"):
			if f := strings.Fields(t); len(f) >= 3 {
				current = f[2]
			}
		case failed[current] && strings.HasPrefix(line, "    ") && strings.Contains(t, ".go:"):
			return current + ": " + t
		}
	}
	return lastLine(out)
}
