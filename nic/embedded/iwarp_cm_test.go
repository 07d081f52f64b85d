// The iWARP NIC's rdma_cm: a connect's Settle after the MPA Reply, and a
// listener on a busy port.

package embedded

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// A NIC with a Settle (rnicd's NICs on a TAP, which meet Linux siw) holds
// a connect back for that long after the MPA Reply, so the program's
// first FPDU cannot follow the Reply before siw's QP reads the socket; a
// context that ends meanwhile abandons the connection.
func TestIWARPConnectSettles(t *testing.T) {
	const settle = 300 * time.Millisecond
	open := func(name string, addr netip.Addr, settle time.Duration) ibv.Device {
		n, err := OpenIWARP(IWARPConfig{Name: name, Addr: addr, MSS: 65483, RTR: iwarp.RTRNone, Settle: settle})
		if err != nil {
			t.Fatal(err)
		}
		d := n.Verbs(ibv.LocalOptions{})
		t.Cleanup(func() { d.Close() })
		return d
	}
	addrB := netip.MustParseAddr("127.0.0.65")
	a, b := open("iwarp0", netip.MustParseAddr("127.0.0.64"), settle), open("iwarp1", addrB, 0)
	l, err := b.(ibv.ConnManager).CMListen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan time.Time, 2)
	go func() {
		for {
			req, err := l.Accept(context.Background())
			if err != nil {
				return
			}
			if _, err := req.Accept(context.Background(), rcQP(t, b), nil, nil); err != nil {
				t.Errorf("Accept: %v", err)
			}
			// Without an RTR the passive side is established once its
			// Reply is out.
			accepted <- time.Now()
		}
	}()

	cn, err := a.(ibv.ConnManager).CMConnect(context.Background(), rcQP(t, a), addrB, l.Port(), nil, nil)
	done := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if d := done.Sub(<-accepted); d < settle-20*time.Millisecond {
		t.Errorf("CMConnect returned %v after the peer accepted, want ≥ the Settle %v", d, settle)
	}
	if cn.QP().State() != verbs.QPSRTS {
		t.Errorf("QP %v after CMConnect, want RTS", cn.QP().State())
	}

	ctx, cancel := context.WithTimeout(context.Background(), settle/3)
	defer cancel()
	if _, err := a.(ibv.ConnManager).CMConnect(ctx, rcQP(t, a), addrB, l.Port(), nil, nil); err != context.DeadlineExceeded {
		t.Errorf("CMConnect with a context shorter than the Settle: %v, want context.DeadlineExceeded", err)
	}
}

// rcQP creates an RC QP on d for the CM.
func rcQP(t *testing.T, d ibv.Device) ibv.QP {
	t.Helper()
	pd, err := d.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := d.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := d.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return qp
}

// A second listener on a port says it is busy (nic.ErrBusy: rnicd answers
// StatusBusy, the drop-in library EADDRINUSE), not an internal error (the
// library's EIO).
func TestIWARPListenInUse(t *testing.T) {
	p := openIWARPPair(t)
	cm := p.B.(ibv.ConnManager)
	l, err := cm.CMListen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := cm.CMListen(l.Port()); !errors.Is(err, nic.ErrBusy) {
		t.Fatalf("a second CMListen on port %d: %v, want nic.ErrBusy", l.Port(), err)
	}
}
