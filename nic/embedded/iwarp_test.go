package embedded

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/ibv/ibvtest"
	"github.com/rnic/rnic/nic/verbs"
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
		d := n.Verbs(nic.IBVOptions{})
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
	if a := p.A.Query(); a.Transport != verbs.TransportIWARP || a.NodeType != verbs.NodeRNIC {
		t.Errorf("iWARP device: transport %v, node type %v; want iWARP, RNIC", a.Transport, a.NodeType)
	}
	r, err := Open(UDPConfig{Addr: netip.MustParseAddr("127.0.0.63"), Port: 47911})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if a := r.Query(); a.Transport != verbs.TransportIB || a.NodeType != verbs.NodeCA {
		t.Errorf("RoCEv2 device: transport %v, node type %v; want InfiniBand, CA", a.Transport, a.NodeType)
	}
}

// A listener closed with a request nobody accepted rejects it: the
// connector's CMConnect fails with ibv.ErrRejected at once, not after the
// MPA timeout.
func TestIWARPListenerCloseRejectsPending(t *testing.T) {
	p := openIWARPPair(t)
	l, err := p.B.(ibv.ConnManager).CMListen(0)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := p.A.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := p.A.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := p.A.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second) // under the 10 s MPA timeout
	defer cancel()
	res := make(chan error, 1)
	go func() {
		_, err := p.A.(ibv.ConnManager).CMConnect(ctx, qp, p.AddrB, l.Port(), nil, nil)
		res <- err
	}()
	for len(l.(*iwarpListener).reqs) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the request never reached the listener")
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, ibv.ErrRejected) {
		t.Fatalf("CMConnect to a listener closed before Accept: %v, want ibv.ErrRejected", err)
	}
}

// TestIWARPParamExactIRDORD: zero IRD/ORD take rdma_cm's default 1, unless
// ExactIRDORD asks for them as given (perftest's -R: 0 on connections
// that make no READs, as siw's MPA frames carry them).
func TestIWARPParamExactIRDORD(t *testing.T) {
	for _, c := range []struct {
		p        *ibv.ConnParam
		ird, ord uint16
	}{
		{nil, 1, 1},
		{&ibv.ConnParam{}, 1, 1},
		{&ibv.ConnParam{ExactIRDORD: true}, 0, 0},
		{&ibv.ConnParam{ResponderResources: 128, ExactIRDORD: true}, 128, 0},
		{&ibv.ConnParam{ResponderResources: 4, InitiatorDepth: 2}, 4, 2},
	} {
		if q := iwarpParamOf(c.p); q.ird != c.ird || q.ord != c.ord {
			t.Errorf("%+v: IRD %d ORD %d, want %d %d", c.p, q.ird, q.ord, c.ird, c.ord)
		}
	}
}
