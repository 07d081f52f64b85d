// The suite run against rnic itself: two in-process NICs (on an in-memory
// link, on kernel UDP sockets, and one NIC talking to itself) behind nic.AsIBV
// with nic/rdmacm.

package ibvtest_test

import (
	"net/netip"
	"testing"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/ibv/ibvtest"
	"github.com/rnic/rnic/nic/rdmacm"
	"github.com/rnic/rnic/transport"
)

// localNIC wraps an embedded NIC, with rdma_cm, as an ibv.Device closed at
// the end of the test.
func localNIC(t *testing.T, cfg embedded.UDPConfig) ibv.Device {
	t.Helper()
	n, err := embedded.Open(cfg)
	if err != nil {
		t.Fatalf("open NIC on %v: %v", cfg.Addr, err)
	}
	d, err := rdmacm.Local(n, rdmacm.Config{})
	if err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// pipePair opens two NICs joined by an in-memory link, fresh for each
// subtest.
func pipePair(a, b netip.Addr) func(t *testing.T) ibvtest.Pair {
	return func(t *testing.T) ibvtest.Pair {
		la, lb := transport.NewPipe()
		return ibvtest.Pair{
			A: localNIC(t, embedded.UDPConfig{Name: "rnic0", Addr: a, Link: la}), AddrA: a,
			B: localNIC(t, embedded.UDPConfig{Name: "rnic1", Addr: b, Link: lb}), AddrB: b,
		}
	}
}

// udpPair opens two embedded-mode NICs on kernel UDP sockets of loopback
// addresses once, shared by every subtest.
func udpPair(t *testing.T, a, b netip.Addr) func(t *testing.T) ibvtest.Pair {
	p := ibvtest.Pair{
		A: localNIC(t, embedded.UDPConfig{Name: "rnic0", Addr: a, MTU: 9000}), AddrA: a,
		B: localNIC(t, embedded.UDPConfig{Name: "rnic1", Addr: b, MTU: 9000}), AddrB: b,
	}
	return func(*testing.T) ibvtest.Pair { return p }
}

// loopback opens one embedded-mode NIC that talks to itself through the
// kernel, shared by every subtest.
func loopback(t *testing.T, a netip.Addr) func(t *testing.T) ibvtest.Pair {
	d := localNIC(t, embedded.UDPConfig{Name: "rnic0", Addr: a})
	return func(*testing.T) ibvtest.Pair { return ibvtest.Pair{A: d, B: d, AddrA: a, AddrB: a} }
}

var (
	pipe4A, pipe4B = netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	pipe6A, pipe6B = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	// Loopback addresses no other package's tests use.
	udpA, udpB, udpSelf = netip.MustParseAddr("127.0.71.1"), netip.MustParseAddr("127.0.71.2"), netip.MustParseAddr("127.0.71.3")
)

func TestRunPipeIPv4(t *testing.T) { ibvtest.Run(t, pipePair(pipe4A, pipe4B)) }
func TestRunPipeIPv6(t *testing.T) { ibvtest.Run(t, pipePair(pipe6A, pipe6B)) }
func TestRunUDP(t *testing.T)      { ibvtest.Run(t, udpPair(t, udpA, udpB)) }
func TestRunLoopback(t *testing.T) { ibvtest.Run(t, loopback(t, udpSelf)) }

func TestRunCMPipeIPv4(t *testing.T) { ibvtest.RunCM(t, pipePair(pipe4A, pipe4B)) }
func TestRunCMPipeIPv6(t *testing.T) { ibvtest.RunCM(t, pipePair(pipe6A, pipe6B)) }
func TestRunCMUDP(t *testing.T)      { ibvtest.RunCM(t, udpPair(t, udpA, udpB)) }
func TestRunCMLoopback(t *testing.T) { ibvtest.RunCM(t, loopback(t, udpSelf)) }

// TestSoakUDP: 5000 QPs through two embedded-mode NICs on kernel UDP
// sockets leave no socket, mapping, goroutine or memory behind.
func TestSoakUDP(t *testing.T) {
	p := udpPair(t, udpSoakA, udpSoakB)(t)
	ibvtest.Soak(t, p, ibvtest.SoakQPs)
}

// TestSoakPipe: the same on an in-memory link.
func TestSoakPipe(t *testing.T) {
	ibvtest.Soak(t, pipePair(pipe4A, pipe4B)(t), ibvtest.SoakQPs)
}

var udpSoakA, udpSoakB = netip.MustParseAddr("127.0.71.4"), netip.MustParseAddr("127.0.71.5")
