//go:build !verbs

package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/passthrough"
)

// TestOpenVerbsWithoutTag: a verbs device in an rnicd built without the
// verbs tag fails to open with passthrough's rebuild hint.
func TestOpenVerbsWithoutTag(t *testing.T) {
	specs, err := devices([]string{"--verbs", "rxe0"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := openVerbs(specs[0])
	if err == nil {
		d.close()
		t.Fatal("openVerbs(rxe0) succeeded without the verbs tag")
	}
	if !errors.Is(err, passthrough.ErrNotBuilt) {
		t.Errorf("openVerbs(rxe0) = %v, want passthrough.ErrNotBuilt", err)
	}
	for _, want := range []string{"rxe0", "-tags verbs"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
