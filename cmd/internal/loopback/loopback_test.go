package loopback

import (
	"errors"
	"net/netip"
	"testing"
)

func TestClientAddr(t *testing.T) {
	for _, tc := range []struct{ server, want string }{
		{"127.0.0.2", "127.0.0.3"},
		{"127.0.0.3", "127.0.0.2"},
		{"127.0.0.9", "127.0.0.3"},
		{"127.0.0.1", "127.0.0.3"},
	} {
		got, err := ClientAddr(netip.MustParseAddr(tc.server), 4791)
		if err != nil || got != netip.MustParseAddr(tc.want) {
			t.Errorf("ClientAddr(%s) = %v, %v; want %s", tc.server, got, err, tc.want)
		}
	}
}

func TestClientAddrIPv6Loopback(t *testing.T) {
	_, err := ClientAddr(netip.IPv6Loopback(), 4791)
	if !errors.Is(err, ErrOneAddress) {
		t.Fatalf("err = %v, want ErrOneAddress", err)
	}
	if want := "server ::1 is IPv6 loopback, which has one address: give --addr"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}
