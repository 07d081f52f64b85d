// rdma_cm behind ibv: Local, LocalWith, the adapter's QP checks and
// parameters, and Listen on port 0.

package rdmacm

import (
	"context"
	"errors"
	"testing"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// TestLocal: Local's device offers rdma_cm and the engine's counters, not
// a Network; the CM binds only QPs of its own NIC; closing the device
// closes the CM.
func TestLocal(t *testing.T) {
	a, b := newPair(t, nil, nil)
	a.cm.Close() // Local attaches its own
	d, err := Local(a.n, Config{})
	if err != nil {
		t.Fatal(err)
	}
	cm, ok := d.(ibv.ConnManager)
	if !ok {
		t.Fatal("Local's device is not an ibv.ConnManager")
	}
	if _, ok := d.(ibv.Network); ok {
		t.Fatal("Local's device claims a Network it was not given")
	}
	if ctr := d.(ibv.Counters).Counters(); len(ctr) == 0 || ctr[0].Name == "" {
		t.Fatalf("counters %v", ctr)
	}
	// A QP of B's NIC, even wrapped as an ibv QP of B, is foreign to A.
	db := nic.AsIBV(b.n.Device, nic.IBVOptions{Close: func() error { return nil }})
	foreign := nic.WrapQP(db, b.qp(t))
	if _, err := cm.CMConnect(ctxT(t), foreign, addrB, 1, nil, nil); !errors.Is(err, ibv.ErrForeign) {
		t.Fatalf("CMConnect with another NIC's QP: %v, want ErrForeign", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cm.CMListen(7174); !errors.Is(err, ErrClosed) {
		t.Fatalf("CMListen after the device closed: %v, want ErrClosed", err)
	}
}

// TestLocalWith: LocalWith closes the NIC with opt.Close and refuses a
// second ConnManager.
func TestLocalWith(t *testing.T) {
	a, _ := newPair(t, nil, nil)
	a.cm.Close()
	if _, err := LocalWith(a.n, Config{}, nic.IBVOptions{ConnManager: ibvCM{}}); err == nil {
		t.Fatal("LocalWith took a ConnManager of its caller's")
	}
	closed := 0
	d, err := LocalWith(a.n, Config{}, nic.IBVOptions{Close: func() error { closed++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil || closed != 1 {
		t.Fatalf("Close: %v, opt.Close called %d times", err, closed)
	}
}

// TestListenPortZero: port 0 gets a free port from the ephemeral range,
// as rdma_bind_addr gives one.
func TestListenPortZero(t *testing.T) {
	a, _ := newPair(t, nil, nil)
	seen := map[uint16]bool{}
	for range 20 {
		l, err := a.cm.Listen(0)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		p := l.Port()
		if p < ephemeralFirst || p >= ephemeralFirst+ephemeralCount || seen[p] {
			t.Fatalf("Listen(0) gave port %d (seen before: %v)", p, seen[p])
		}
		seen[p] = true
	}
}

// TestIBVConnParam: ibv's connection parameters reach the QP: a
// responder-resources and initiator-depth of 4 each way, and each side's
// own local ACK timeout (rdma_set_option's RDMA_OPTION_ID_ACK_TIMEOUT).
func TestIBVConnParam(t *testing.T) {
	a, b := newPair(t, nil, nil)
	ctx := ctxT(t)
	l, err := b.cm.Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	da := nic.AsIBV(a.n.Device, nic.IBVOptions{ConnManager: a.cm.ConnManager(), Close: func() error { return nil }})
	db := nic.AsIBV(b.n.Device, nic.IBVOptions{ConnManager: b.cm.ConnManager(), Close: func() error { return nil }})
	p := &ibv.ConnParam{ResponderResources: 4, InitiatorDepth: 4, ACKTimeout: 21}
	pb := *p
	pb.ACKTimeout = 20
	qb := b.qp(t)
	res := make(chan error, 1)
	go func() {
		r, err := ibvListener{l, ibvCM{b.cm}}.Accept(ctx)
		if err == nil {
			_, err = r.Accept(ctx, nic.WrapQP(db, qb), nil, &pb)
		}
		res <- err
	}()
	cn, err := da.(ibv.ConnManager).CMConnect(ctx, nic.WrapQP(da, a.qp(t)), addrB, l.Port(), nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	attr, err := cn.QP().Query()
	if err != nil {
		t.Fatal(err)
	}
	if attr.MaxRdAtomic != 4 || attr.MaxDestRdAtomic != 4 || attr.State != verbs.QPSRTS || attr.Timeout != 21 {
		t.Fatalf("QP attributes %+v, want max_rd_atomic and max_dest_rd_atomic 4, timeout 21 in RTS", attr)
	}
	if got, err := qb.Query(); err != nil || got.Timeout != 20 {
		t.Errorf("the passive side's QP timeout %d (%v), want its own 20", got.Timeout, err)
	}
	if err := cn.Disconnect(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestIBVUD: UD ids through nic.AsIBV's wrappers: a resolve reaches the
// listener's request, its Accept answers with the ibv QP's number and
// Q_Key; a request without a listener wraps ibv.ErrUnreachable; a Local
// device whose CM has no UD ids refuses them with ErrNotSupported.
func TestIBVUD(t *testing.T) {
	a, b := newPair(t, nil, nil)
	ctx := ctxT(t)
	da := nic.AsIBV(a.n.Device, nic.IBVOptions{ConnManager: a.cm.ConnManager(), Close: func() error { return nil }})
	db := nic.AsIBV(b.n.Device, nic.IBVOptions{ConnManager: b.cm.ConnManager(), Close: func() error { return nil }})
	l, err := db.(ibv.UDConnManager).CMListenUD(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	qb := b.udQP(t)
	res := make(chan error, 1)
	go func() {
		r, err := l.Accept(ctx)
		if err == nil {
			err = r.Accept(nic.WrapQP(db, qb), []byte("ud ok"))
		}
		res <- err
	}()
	p, err := da.(ibv.UDConnManager).CMResolveUD(ctx, addrB, l.Port(), []byte("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if p.QPN != qb.QPN() || p.QKey != UDPQKey || p.Remote.Port() != l.Port() || p.AV.DGID.Unmap() != addrB {
		t.Fatalf("peer %+v", p)
	}
	if _, err := da.(ibv.UDConnManager).CMResolveUD(ctx, addrB, l.Port()+1, nil); !errors.Is(err, ibv.ErrUnreachable) {
		t.Fatalf("no listener: %v, want ErrUnreachable", err)
	}
	plain := nic.AsIBV(a.n.Device, nic.IBVOptions{ConnManager: rcOnly{a.cm.ConnManager()}, Close: func() error { return nil }})
	if _, err := plain.(ibv.UDConnManager).CMListenUD(0); !errors.Is(err, verbs.ErrNotSupported) {
		t.Fatalf("CM without UD ids: %v, want ErrNotSupported", err)
	}
}

// rcOnly hides the UD methods of a ConnManager.
type rcOnly struct{ ibv.ConnManager }

// TestIBVListenInUse: a second listener on a port says it is busy
// (verbs.ErrBusy: rnicd answers StatusBusy, the drop-in library EADDRINUSE),
// not an internal error; the port is free again once the first closes.
func TestIBVListenInUse(t *testing.T) {
	a, _ := newPair(t, nil, nil)
	a.cm.Close()
	d, err := Local(a.n, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cm := d.(ibv.ConnManager)
	l, err := cm.CMListen(7174)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cm.CMListen(7174); !errors.Is(err, verbs.ErrBusy) {
		t.Fatalf("a second CMListen on port 7174: %v, want verbs.ErrBusy", err)
	}
	l.Close()
	l, err = cm.CMListen(7174)
	if err != nil {
		t.Fatalf("CMListen after the first listener closed: %v", err)
	}
	l.Close()
}
