// Package browsertest runs the pages rnic writes (ladder diagrams, the
// conformance report) in a real headless Chromium, for tests that measure
// them in the browser.
package browsertest

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"
)

// Find returns a headless-capable Chromium, or skips the test saying how
// to install one.
func Find(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium: apt-get install -y chromium (Debian) to run the browser test")
	return ""
}

// Run runs bin headless with a profile of its own and args, and returns
// its standard output and standard error; a failure fails the test.
func Run(t testing.TB, bin string, args ...string) (stdout, stderr []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + t.TempDir(), "--hide-scrollbars"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes(), errb.Bytes()
}
