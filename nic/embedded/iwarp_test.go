package embedded

import (
	"net/netip"
	"testing"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/ibv/ibvtest"
)

// openIWARPPair opens two iWARP NICs on loopback kernel TCP as ibv
// devices, closed when t ends.
func openIWARPPair(t *testing.T) ibvtest.Pair {
	t.Helper()
	p := ibvtest.Pair{AddrA: netip.MustParseAddr("127.0.0.61"), AddrB: netip.MustParseAddr("127.0.0.62"), IWARP: true}
	open := func(name string, addr netip.Addr) ibv.Device {
		n, err := OpenIWARP(IWARPConfig{Name: name, Addr: addr, MSS: 65483})
		if err != nil {
			t.Fatalf("OpenIWARP(%v): %v", addr, err)
		}
		d := n.Verbs(ibv.LocalOptions{})
		t.Cleanup(func() { d.Close() })
		return d
	}
	p.A, p.B = open("iwarp0", p.AddrA), open("iwarp1", p.AddrB)
	return p
}

// The verbs suite: iWARP QPs connect only through the CM, so it skips
// every manually connected test; the CM suite connects, rejects (with the
// rejecter's private data), moves data and disconnects from either side.
func TestIWARPVerbs(t *testing.T) { ibvtest.Run(t, openIWARPPair) }

func TestIWARPConnManager(t *testing.T) { ibvtest.RunCM(t, openIWARPPair) }

// A device tells its transport as libibverbs does: an iWARP NIC is an
// RNIC on iWARP, a RoCEv2 NIC a CA on IB transport.
func TestTransportReported(t *testing.T) {
	p := openIWARPPair(t)
	if a := p.A.Query(); a.Transport != nic.TransportIWARP || a.NodeType != nic.NodeRNIC {
		t.Errorf("iWARP device: transport %v, node type %v; want iWARP, RNIC", a.Transport, a.NodeType)
	}
	r, err := Open(UDPConfig{Addr: netip.MustParseAddr("127.0.0.63"), Port: 47911})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if a := r.Query(); a.Transport != nic.TransportIB || a.NodeType != nic.NodeCA {
		t.Errorf("RoCEv2 device: transport %v, node type %v; want InfiniBand, CA", a.Transport, a.NodeType)
	}
}
