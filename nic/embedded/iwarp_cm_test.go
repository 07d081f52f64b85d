// The iWARP NIC's rdma_cm: how connections end, a connect's Settle after
// the MPA Reply, a listener on a busy port, the device's attributes.

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
	"github.com/rnic/rnic/nic/ibv/ibvtest"
	"github.com/rnic/rnic/nic/verbs"
)

// cmEndTimeout bounds the wait for a connection's end: well over the
// engine's 5 s close timeout, so that a connection only that timer ends
// still passes (on a slow machine), and one that never ends fails.
const cmEndTimeout = 15 * time.Second

// iwarpConnected is one connection between the two NICs of an iWARP pair
// set up through their CMs: qa and ca the active side's QP and
// connection, qb and cb the passive side's.
type iwarpConnected struct {
	qa, qb ibv.QP
	ca, cb ibv.CMConn
}

// rcQP creates an RC QP on d with a PD and CQ of its own.
func rcQP(t *testing.T, d ibv.Device) ibv.QP {
	t.Helper()
	pd, err := d.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := d.CreateCQ(16)
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

// connectIWARP connects a new QP of p.A to a new one of p.B through l.
func connectIWARP(t *testing.T, p ibvtest.Pair, l ibv.CMListener) iwarpConnected {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmEndTimeout)
	defer cancel()
	c := iwarpConnected{qa: rcQP(t, p.A), qb: rcQP(t, p.B)}
	accepted := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err == nil {
			c.cb, err = req.Accept(ctx, c.qb, nil, nil)
		}
		accepted <- err
	}()
	ca, err := p.A.(ibv.ConnManager).CMConnect(ctx, c.qa, p.AddrB, l.Port(), nil, nil)
	if err != nil {
		cancel()
	}
	if aerr := <-accepted; err != nil || aerr != nil {
		t.Fatalf("connect: active side %v, passive side %v", err, aerr)
	}
	c.ca = ca
	return c
}

// waitEnded fails unless the connection's Done closes in time.
func waitEnded(t *testing.T, what string, cn ibv.CMConn) {
	t.Helper()
	select {
	case <-cn.Done():
	case <-time.After(cmEndTimeout):
		t.Fatalf("%s: the connection never ended (Done still open after %v)", what, cmEndTimeout)
	}
}

// A QP destroyed under its live connection ends the connection at both
// sides: rdma_cm reports DISCONNECTED to an id whose QP was destroyed, so
// Done must close even though the engine calls nothing of the QP's back
// after Destroy.
func TestIWARPDestroyEndsConnection(t *testing.T) {
	p := openIWARPPair(t)
	l, err := p.B.(ibv.ConnManager).CMListen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := connectIWARP(t, p, l)
	if err := c.qa.Destroy(); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, "active side, its QP destroyed", c.ca)
	waitEnded(t, "passive side, the peer's QP destroyed", c.cb)
	// rdma_disconnect after that has nothing left to do.
	ctx, cancel := context.WithTimeout(context.Background(), cmEndTimeout)
	defer cancel()
	for _, cn := range []ibv.CMConn{c.ca, c.cb} {
		if err := cn.Disconnect(ctx); err != nil {
			t.Errorf("Disconnect of a connection already down: %v", err)
		}
	}
}

// cmtime's disconnect, many times: rdma_disconnect, and at once
// rdma_destroy_qp, while the Disconnect waits for the peer's close. The
// QP's destruction (which resets the stream) must end the wait whether it
// came before the peer's FIN or after; before the fix, the wait (and
// cmtime over rnicd) hung whenever the destruction came first.
func TestIWARPDisconnectThenDestroy(t *testing.T) {
	p := openIWARPPair(t)
	l, err := p.B.(ibv.ConnManager).CMListen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 20 {
		c := connectIWARP(t, p, l)
		res := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), cmEndTimeout)
			defer cancel()
			res <- c.ca.Disconnect(ctx)
		}()
		// Disconnect moves the QP to ERR once our FIN is on its way.
		for c.qa.State() != verbs.QPSErr {
			time.Sleep(10 * time.Microsecond)
		}
		if err := c.qa.Destroy(); err != nil {
			t.Fatal(err)
		}
		if err := <-res; err != nil {
			t.Fatalf("connection %d: Disconnect with the QP destroyed under it: %v", i, err)
		}
		waitEnded(t, "active side", c.ca)
		waitEnded(t, "passive side", c.cb)
		if err := c.qb.Destroy(); err != nil {
			t.Fatal(err)
		}
	}
}

// A connect to a port nobody listens on (the TCP connection refused) is a
// rejection, as the kernel's iWARP CM reports it (RDMA_CM_EVENT_REJECTED),
// with the reason of a REJ for an unknown service ID, not a failure to
// reach the peer.
func TestIWARPConnectNoListener(t *testing.T) {
	p := openIWARPPair(t)
	l, err := p.B.(ibv.ConnManager).CMListen(0)
	if err != nil {
		t.Fatal(err)
	}
	port := l.Port()
	l.Close() // nobody listens there now
	ctx, cancel := context.WithTimeout(context.Background(), cmEndTimeout)
	defer cancel()
	_, err = p.A.(ibv.ConnManager).CMConnect(ctx, rcQP(t, p.A), p.AddrB, port, nil, nil)
	var d ibv.RejectDetail
	if !errors.Is(err, ibv.ErrRejected) || !errors.As(err, &d) {
		t.Fatalf("CMConnect to a port nobody listens on: %v; want ibv.ErrRejected with its detail", err)
	}
	if d.RejectReason() != ibv.RejectNoListener || len(d.RejectPrivateData()) != 0 {
		t.Errorf("reject reason %d with %d bytes of private data; want %d (no listener), none",
			d.RejectReason(), len(d.RejectPrivateData()), ibv.RejectNoListener)
	}
}

// iWARP has RC QPs only: any other type is refused as not supported
// (EOPNOTSUPP through rnicd, as siw refuses it), not as an internal error.
func TestIWARPOnlyRC(t *testing.T) {
	p := openIWARPPair(t)
	pd, err := p.A.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := p.A.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []verbs.QPType{verbs.QPTypeUD, verbs.QPTypeUC} {
		_, err := p.A.CreateQP(pd, ibv.QPInit{Type: typ, SendCQ: cq, RecvCQ: cq,
			Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if !errors.Is(err, verbs.ErrNotSupported) {
			t.Errorf("%v QP on iWARP: %v; want verbs.ErrNotSupported", typ, err)
		}
	}
}

// An iWARP device reports what its engine does: IRD and ORD up to what
// the verbs API can carry (a byte; the engine takes up to MPA's 14 bits),
// RFC 7306 atomics executed with one atomic instruction on host memory
// (ATOMIC_GLOB, as nic's RoCE devices), and no UD port checks or RNR NAKs
// (iWARP has neither). A connection asking for the maximum IRD and ORD
// gets them.
func TestIWARPDeviceAttrs(t *testing.T) {
	p := openIWARPPair(t)
	a := p.A.Query()
	if a.MaxQPRdAtom != 255 || a.MaxQPInitRdAtom != 255 {
		t.Errorf("max_qp_rd_atom %d, max_qp_init_rd_atom %d; want 255, 255", a.MaxQPRdAtom, a.MaxQPInitRdAtom)
	}
	if a.AtomicCap != verbs.AtomicGlob {
		t.Errorf("atomic_cap %v, want %v", a.AtomicCap, verbs.AtomicGlob)
	}
	if no := verbs.DeviceRCRNRNAKGen | verbs.DeviceUDAVPortEnforce; a.DeviceCapFlags&no != 0 {
		t.Errorf("device_cap_flags %#x claim RNR NAKs or UD port checks", uint32(a.DeviceCapFlags))
	}

	l, err := p.B.(ibv.ConnManager).CMListen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), cmEndTimeout)
	defer cancel()
	most := &ibv.ConnParam{ResponderResources: uint8(a.MaxQPRdAtom), InitiatorDepth: uint8(a.MaxQPInitRdAtom)}
	qa, qb := rcQP(t, p.A), rcQP(t, p.B)
	accepted := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err == nil {
			_, err = req.Accept(ctx, qb, nil, most)
		}
		accepted <- err
	}()
	_, err = p.A.(ibv.ConnManager).CMConnect(ctx, qa, p.AddrB, l.Port(), nil, most)
	if aerr := <-accepted; err != nil || aerr != nil {
		t.Fatalf("connect with IRD/ORD %d/%d: active side %v, passive side %v", most.ResponderResources, most.InitiatorDepth, err, aerr)
	}
	for _, q := range []ibv.QP{qa, qb} {
		got, err := q.Query()
		if err != nil {
			t.Fatal(err)
		}
		if int(got.MaxDestRdAtomic) != a.MaxQPRdAtom || int(got.MaxRdAtomic) != a.MaxQPInitRdAtom {
			t.Errorf("QP %#x: max_dest_rd_atomic %d, max_rd_atomic %d; want %d, %d", q.QPN(),
				got.MaxDestRdAtomic, got.MaxRdAtomic, a.MaxQPRdAtom, a.MaxQPInitRdAtom)
		}
	}
}

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
		d := n.Verbs(nic.IBVOptions{})
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

// A second listener on a port says it is busy (verbs.ErrBusy: rnicd answers
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
	if _, err := cm.CMListen(l.Port()); !errors.Is(err, verbs.ErrBusy) {
		t.Fatalf("a second CMListen on port %d: %v, want verbs.ErrBusy", l.Port(), err)
	}
}
