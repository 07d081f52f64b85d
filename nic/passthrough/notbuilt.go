//go:build !verbs

// The pure-Go build: no libibverbs, so verbs: device strings fail with
// ErrNotBuilt rather than with "backend not linked".

package passthrough

import (
	"fmt"

	"github.com/rnic/rnic/nic/ibv"
)

func init() {
	ibv.Register(ibv.BackendVerbs, func(s ibv.Spec) (ibv.Device, error) { return Open(s.Name) })
}

// Built reports whether this program has the libibverbs backend.
const Built = false

// Open fails: this program was built without the verbs tag.
func Open(name string) (ibv.Device, error) {
	return nil, fmt.Errorf("passthrough: open %s: %w", name, ErrNotBuilt)
}

// Devices fails: this program was built without the verbs tag.
func Devices() ([]string, error) {
	return nil, fmt.Errorf("passthrough: list devices: %w", ErrNotBuilt)
}
