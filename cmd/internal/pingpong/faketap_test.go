package pingpong

// The fake TAPs of nic/tapnic/tapnictest, installed as the package's
// openTAPHost for a test.

import (
	"testing"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/tapnic/tapnictest"
)

type fakeTAPs struct{ *tapnictest.TAPs }

// newFakeTAPs links the TAPs named a and b and installs the fake for the
// test's duration.
func newFakeTAPs(t *testing.T, a, b string) *fakeTAPs {
	t.Helper()
	f := &fakeTAPs{tapnictest.New(a, b)}
	old := openTAPHost
	openTAPHost = func(cfg tapnic.Config) (ibv.Device, error) {
		h, err := f.Open(cfg)
		if err != nil {
			return nil, err
		}
		// The fake's TCP is the NIC's own network, as a TAP NIC's.
		return nic.AsIBV(h.NIC().Device, nic.IBVOptions{Network: h, Close: h.Close}), nil
	}
	t.Cleanup(func() { openTAPHost = old })
	return f
}

// errRefused is what the fake NIC's TCP says when nobody listens.
var errRefused = tapnictest.ErrRefused
