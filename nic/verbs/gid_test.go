package verbs

import (
	"net/netip"
	"testing"
)

func TestGIDFromAddr(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.3.4":        "::ffff:1.2.3.4",
		"::ffff:1.2.3.4": "::ffff:1.2.3.4",
		"2001:db8::1":    "2001:db8::1",
		"fe80::2%lo":     "fe80::2",
	} {
		if got := GIDFromAddr(netip.MustParseAddr(in)); got != netip.MustParseAddr(want) {
			t.Errorf("GIDFromAddr(%s) = %v, want %s", in, got, want)
		}
	}
	if GIDFromAddr(netip.Addr{}).IsValid() {
		t.Error("GIDFromAddr(invalid) is valid")
	}
}
