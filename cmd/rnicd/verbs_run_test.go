//go:build !verbs

package main

import (
	"strings"
	"testing"
)

// TestRunVerbsWithoutTag: rnicd --verbs in a build without the verbs tag
// exits 1 with passthrough's rebuild hint, before serving anything.
func TestRunVerbsWithoutTag(t *testing.T) {
	out, errOut, code := rnicd(t, nil, "--verbs", "rxe0", "--socket", t.TempDir()+"/s.sock")
	if code != 1 || out != "" || !strings.Contains(errOut, "rxe0") || !strings.Contains(errOut, "-tags verbs") {
		t.Errorf("status %d, stdout %q, stderr %q; want 1 and the rebuild hint", code, out, errOut)
	}
}
