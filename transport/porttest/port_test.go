package porttest

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePort: the port is below the ephemeral range and a listener on
// all addresses can take it.
func TestFreePort(t *testing.T) {
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if low := ephemeralLow(); low-20000 >= 1000 && (p < 20000 || p >= low) {
		t.Errorf("port %d, want 20000..%d", p, low-1)
	}
	l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("listen on the free port %d: %v", p, err)
	}
	l.Close()
}
