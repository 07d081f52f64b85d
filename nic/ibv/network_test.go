package ibv

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
)

// TestKernelNetwork: kernel TCP dials from the given local address and
// retries exactly a refused connection; a device's own network retries
// anything but cancellation.
func TestKernelNetwork(t *testing.T) {
	var k KernelNetwork
	l, err := k.Listen(netip.MustParseAddrPort("127.0.0.2:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	target := l.Addr().(*net.TCPAddr).AddrPort()
	c, err := k.Dial(context.Background(), netip.MustParseAddr("127.0.0.3"), target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.LocalAddr().(*net.TCPAddr).AddrPort().Addr().Unmap(); got != netip.MustParseAddr("127.0.0.3") {
		t.Errorf("dialled from %s, want 127.0.0.3", got)
	}
	l.Close()
	_, err = k.Dial(context.Background(), netip.MustParseAddr("127.0.0.3"), target)
	if !errors.Is(err, syscall.ECONNREFUSED) || !DialRetryable(k, err) {
		t.Errorf("dial to a closed port: %v (retryable %v)", err, DialRetryable(k, err))
	}
	other := errors.New("connection refused, in a user-space stack's words")
	var own Network = otherNetwork{}
	if DialRetryable(k, other) || !DialRetryable(own, other) || DialRetryable(own, context.Canceled) {
		t.Error("the kernel retries ECONNREFUSED only, a device's own TCP anything but cancellation")
	}
}

// otherNetwork is a Network that is not KernelNetwork.
type otherNetwork struct{ KernelNetwork }
