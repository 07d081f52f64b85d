//go:build !verbs

package passthrough

import (
	"errors"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
)

// TestOpenWithoutTag: in the pure-Go build a verbs: device string reaches
// this package's opener and fails with ErrNotBuilt, saying how to rebuild.
func TestOpenWithoutTag(t *testing.T) {
	s, err := ibv.ParseSpec("verbs:rxe0")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ibv.Open(s)
	if err == nil {
		d.Close()
		t.Fatal("ibv.Open(verbs:rxe0) succeeded in a build without the verbs tag")
	}
	if !errors.Is(err, ErrNotBuilt) {
		t.Errorf("ibv.Open(verbs:rxe0) = %v, want ErrNotBuilt", err)
	}
	if errors.Is(err, ibv.ErrNoBackend) {
		t.Errorf("ibv.Open(verbs:rxe0) = %v: the opener was not registered", err)
	}
	for _, want := range []string{"verbs:rxe0", "-tags verbs", "libibverbs-dev"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := Devices(); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("Devices() = %v, want ErrNotBuilt", err)
	}
	if Built {
		t.Error("Built is true in the untagged build")
	}
}
