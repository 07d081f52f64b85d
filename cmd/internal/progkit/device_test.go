package progkit

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
)

// TestTAPAddrs: a TAP's prefixes are its addresses, unmapped; one without
// a name or an address is a configuration error.
func TestTAPAddrs(t *testing.T) {
	tc := &tapnic.Config{TAP: "t0", Prefixes: []netip.Prefix{
		netip.MustParsePrefix("::ffff:10.0.0.1/120"), netip.MustParsePrefix("2001:db8::1/64")}}
	got, err := testKit.TAPAddrs(tc)
	if err != nil || len(got) != 2 || got[0] != netip.MustParseAddr("10.0.0.1") || got[1] != netip.MustParseAddr("2001:db8::1") {
		t.Fatalf("TAPAddrs = %v, %v", got, err)
	}
	for _, bad := range []*tapnic.Config{{Prefixes: tc.Prefixes}, {TAP: "t0"}} {
		if _, err := testKit.TAPAddrs(bad); !errors.Is(err, errTestConfig) {
			t.Errorf("TAPAddrs(%+v): %v, want a configuration error", bad, err)
		}
	}
}

// TestTAPConfig: the flags fill what the TAP config leaves empty, and only
// that.
func TestTAPConfig(t *testing.T) {
	got := TAPConfig(tapnic.Config{TAP: "t0"}, "rnic3", nil, nil)
	if got.Name != "rnic3" {
		t.Errorf("name %q, want rnic3", got.Name)
	}
	if got := TAPConfig(tapnic.Config{TAP: "t0", Name: "own"}, "rnic3", nil, nil); got.Name != "own" {
		t.Errorf("name %q, want the config's own", got.Name)
	}
}

// TestNotLocal names the setting, the device and its backend.
func TestNotLocal(t *testing.T) {
	spec, err := ibv.ParseSpec("verbs:rxe0")
	if err != nil {
		t.Fatal(err)
	}
	err = testKit.NotLocal(spec, "a TAP")
	want := "test: bad configuration: a TAP is for a NIC of this process, not device verbs:rxe0 (its " + spec.Backend.String() + " backend owns the port)"
	if !errors.Is(err, errTestConfig) || err.Error() != want {
		t.Fatalf("NotLocal = %q, want %q", err, want)
	}
}
