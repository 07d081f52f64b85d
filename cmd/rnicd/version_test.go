package main

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/rnic/rnic/cmd/internal/version"
)

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--version"}, &out, &errb, nil)
	if code != 0 || !regexp.MustCompile(`^rnicd `+regexp.QuoteMeta(version.Release)+` \(module .*\) go1\.\S+ \w+/\w+\n$`).MatchString(out.String()) {
		t.Errorf("rnicd --version: exit %d, %q, stderr %q", code, out.String(), errb.String())
	}
}
