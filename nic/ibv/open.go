// Opening a device by its string: backends outside this process register
// an opener (nic/rnicd/client for NAME@SOCKET, nic/passthrough for
// verbs:NAME); a program links the backends it offers.

package ibv

import (
	"errors"
	"fmt"
	"sync"
)

// ErrNoBackend is returned by Open for a backend this program was built
// without.
var ErrNoBackend = errors.New("ibv: backend not linked into this program")

// Opener opens the device a Spec names.
type Opener func(Spec) (Device, error)

var openers struct {
	sync.Mutex
	m map[Backend]Opener
}

// Register makes Open use open for backend b (BackendDaemon or
// BackendVerbs) and returns the opener it replaces (nil if none), so a
// test that installs a fake can put the real one back.
func Register(b Backend, open Opener) (previous Opener) {
	openers.Lock()
	defer openers.Unlock()
	if openers.m == nil {
		openers.m = make(map[Backend]Opener)
	}
	previous = openers.m[b]
	openers.m[b] = open
	return previous
}

// Open opens the device s names. A local device (no @, no verbs:) is the
// program's own to build from its flags: Open refuses it.
func Open(s Spec) (Device, error) {
	if s.Backend == BackendLocal {
		return nil, fmt.Errorf("ibv: open %s: a local NIC is built by the program, not opened", s)
	}
	openers.Lock()
	open := openers.m[s.Backend]
	openers.Unlock()
	if open == nil {
		return nil, fmt.Errorf("ibv: open %s: %v: %w", s, s.Backend, ErrNoBackend)
	}
	d, err := open(s)
	if err != nil {
		return nil, fmt.Errorf("ibv: open %s: %w", s, err)
	}
	return d, nil
}
