// AsIBV's optional interfaces and WrapQP.

package nic_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

var errFake = errors.New("fake")

// fakeNet and fakeCM record what reaches them and fail with errFake.
type fakeNet struct{ calls []string }

func (f *fakeNet) Listen(addr netip.AddrPort) (net.Listener, error) {
	f.calls = append(f.calls, "Listen "+addr.String())
	return nil, errFake
}

func (f *fakeNet) Dial(_ context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	f.calls = append(f.calls, "Dial "+local.String()+" "+remote.String())
	return nil, errFake
}

type fakeCM struct{ calls []string }

func (f *fakeCM) CMListen(port uint16) (ibv.CMListener, error) {
	f.calls = append(f.calls, "CMListen")
	return nil, errFake
}

func (f *fakeCM) CMConnect(_ context.Context, qp ibv.QP, addr netip.Addr, port uint16, _ []byte, _ *ibv.ConnParam) (ibv.CMConn, error) {
	f.calls = append(f.calls, "CMConnect "+addr.String())
	return nil, errFake
}

// TestIBVOptionalInterfaces: AsIBV's device implements Network and
// ConnManager exactly when IBVOptions gives them, their calls reach what
// was given, and DeviceOf finds the *nic.Device behind every kind.
func TestIBVOptionalInterfaces(t *testing.T) {
	for _, c := range []struct {
		name    string
		net, cm bool
	}{{"plain", false, false}, {"network", true, false}, {"cm", false, true}, {"both", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			dev, err := nic.Open(nic.Config{Name: "rnic9"})
			if err != nil {
				t.Fatal(err)
			}
			var opt nic.IBVOptions
			fn, fc := &fakeNet{}, &fakeCM{}
			if c.net {
				opt.Network = fn
			}
			if c.cm {
				opt.ConnManager = fc
			}
			d := nic.AsIBV(dev, opt)
			defer d.Close()
			n, isNet := d.(ibv.Network)
			cm, isCM := d.(ibv.ConnManager)
			if isNet != c.net || isCM != c.cm {
				t.Fatalf("implements Network %v, ConnManager %v; want %v, %v", isNet, isCM, c.net, c.cm)
			}
			if _, ok := d.(ibv.Counters); !ok {
				t.Error("an AsIBV device does not implement Counters")
			}
			if nic.DeviceOf(d) != dev {
				t.Fatal("DeviceOf does not return the device AsIBV wraps")
			}
			if isNet {
				a := netip.MustParseAddrPort("10.0.0.1:7")
				if _, err := n.Listen(a); !errors.Is(err, errFake) {
					t.Fatalf("Listen: %v", err)
				}
				if _, err := n.Dial(context.Background(), a.Addr(), a); !errors.Is(err, errFake) {
					t.Fatalf("Dial: %v", err)
				}
				if len(fn.calls) != 2 || fn.calls[0] != "Listen 10.0.0.1:7" || fn.calls[1] != "Dial 10.0.0.1 10.0.0.1:7" {
					t.Fatalf("the Network got %q", fn.calls)
				}
			}
			if isCM {
				if _, err := cm.CMListen(1); !errors.Is(err, errFake) {
					t.Fatalf("CMListen: %v", err)
				}
				if _, err := cm.CMConnect(context.Background(), nil, netip.MustParseAddr("10.0.0.2"), 1, nil, nil); !errors.Is(err, errFake) {
					t.Fatalf("CMConnect: %v", err)
				}
				if len(fc.calls) != 2 || fc.calls[1] != "CMConnect 10.0.0.2" {
					t.Fatalf("the ConnManager got %q", fc.calls)
				}
			}
		})
	}
	if nic.DeviceOf(nil) != nil {
		t.Error("DeviceOf(nil) is not nil")
	}
}

// TestWrapQP: a QP created on the *nic.Device directly gets one wrapper,
// the one a later WrapQP returns too, whatever optional interfaces the
// device has; a QP of the device's own CreateQP wraps to itself; a QP of
// another device, or a destroyed one, wraps to nil.
func TestWrapQP(t *testing.T) {
	la, lb := transport.NewPipe()
	na, err := embedded.Open(embedded.UDPConfig{Addr: netip.MustParseAddr("10.0.0.1"), Link: la})
	if err != nil {
		t.Fatal(err)
	}
	defer na.Close()
	nb, err := embedded.Open(embedded.UDPConfig{Addr: netip.MustParseAddr("10.0.0.2"), Link: lb})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	d := nic.AsIBV(na.Device, nic.IBVOptions{ConnManager: &fakeCM{}, Close: func() error { return nil }})
	mkQP := func(n *embedded.NIC) *nic.QP {
		pd, err := n.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := n.CreateCQ(4)
		if err != nil {
			t.Fatal(err)
		}
		qp, err := n.CreateQP(pd, nic.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
			Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return qp
	}
	qp := mkQP(na)
	w := nic.WrapQP(d, qp)
	if w == nil || nic.QPOf(w) != qp || w.QPN() != qp.QPN() {
		t.Fatalf("WrapQP = %v", w)
	}
	if nic.WrapQP(d, qp) != w {
		t.Fatal("a second WrapQP made another wrapper")
	}

	pd, err := d.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := d.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	own, err := d.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if nic.WrapQP(d, nic.QPOf(own)) != own {
		t.Fatal("WrapQP of the device's own QP is not that QP")
	}

	if w := nic.WrapQP(d, mkQP(nb)); w != nil {
		t.Fatalf("WrapQP of another device's QP = %v, want nil", w)
	}
	if err := w.Destroy(); err != nil {
		t.Fatal(err)
	}
	if w := nic.WrapQP(d, qp); w != nil {
		t.Fatalf("WrapQP of a destroyed QP = %v, want nil", w)
	}
	if nic.WrapQP(&foreignDevice{d}, qp) != nil {
		t.Fatal("WrapQP on a device that is not AsIBV's is not nil")
	}
}

// foreignDevice is an ibv.Device that is not one of AsIBV's.
type foreignDevice struct{ ibv.Device }

// TestIBVEventOfUnwrappedQP: an event of a QP the AsIBV device has no
// wrapper for (destroyed meanwhile, or never wrapped) is dropped, not
// passed on without its QP, where it would look like a port event (UCX's
// async handler dereferenced the NULL element.qp of one). A wrapped QP's
// event that follows it comes first, with its QP.
func TestIBVEventOfUnwrappedQP(t *testing.T) {
	link, _ := transport.NewPipe()
	n, err := embedded.Open(embedded.UDPConfig{Addr: netip.MustParseAddr("10.0.0.1"), Link: link})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	d := nic.AsIBV(n.Device, nic.IBVOptions{Close: func() error { return nil }})
	pd, err := d.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := d.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	srq, err := d.CreateSRQ(pd, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	toErr := func(modify func(*verbs.QPAttr, verbs.QPAttrMask) error) {
		t.Helper()
		if err := modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.AttrState); err != nil {
			t.Fatal(err)
		}
	}
	// A QP made on the nic device directly has no wrapper: its
	// LAST_WQE_REACHED (an SRQ QP entering ERR) has no QP to carry.
	rawPD, err := n.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	rawSRQ, err := n.CreateSRQ(rawPD, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := n.CreateQP(rawPD, nic.QPInit{Type: verbs.QPTypeRC, SendCQ: nic.CQOf(cq), RecvCQ: nic.CQOf(cq),
		SRQ: rawSRQ, Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	toErr(raw.Modify)
	own, err := d.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, SRQ: srq,
		Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	toErr(own.Modify)
	select {
	case e := <-d.Events():
		if e.Type != verbs.EventQPLastWQEReached || e.QP != own {
			t.Fatalf("first event %v for QP %v, want LAST_WQE_REACHED for QP %#x (the unwrapped QP's must be dropped)", e.Type, e.QP, own.QPN())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the wrapped QP")
	}
}
