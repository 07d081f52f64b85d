// rdma_cm through the daemon: the ibv suite's CM tests on clients of one
// NIC (loopback) and of two NICs of one daemon, and a client killed with
// connections up.

package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/ibv/ibvtest"

	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

func TestConformanceCM(t *testing.T) {
	t.Run("one NIC", func(t *testing.T) {
		d := rnicdtest.Start(t, rnicdtest.Options{MTU: 9000})
		ibvtest.RunCM(t, func(t *testing.T) ibvtest.Pair {
			return ibvtest.Pair{A: open(t, d, 0), B: open(t, d, 0), AddrA: d.NICs[0].Addr, AddrB: d.NICs[0].Addr}
		})
	})
	t.Run("two NICs", func(t *testing.T) {
		d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2})
		ibvtest.RunCM(t, func(t *testing.T) ibvtest.Pair {
			return ibvtest.Pair{A: open(t, d, 0), B: open(t, d, 1), AddrA: d.NICs[0].Addr, AddrB: d.NICs[1].Addr}
		})
	})
}

// cmOf returns a client's ConnManager.
func cmOf(t *testing.T, dev ibv.Device) ibv.ConnManager {
	t.Helper()
	cm, ok := dev.(ibv.ConnManager)
	if !ok {
		t.Fatalf("%s: not an ibv.ConnManager", dev.Name())
	}
	return cm
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestCMClientGone: a client that goes (its connection to the daemon
// closes, as at kill -9) with a connection up and a listener open: its
// peer's Done closes (the daemon sent a DREQ for it), and its listener's
// port is free again.
func TestCMClientGone(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a, b := open(t, d, 0), open(t, d, 0)
	ea, eb := newEnd(t, a, verbs.QPTypeRC, 4096), newEnd(t, b, verbs.QPTypeRC, 4096)
	ctx := ctxFor(t, 20*time.Second)
	l, err := cmOf(t, b).CMListen(0)
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		c   ibv.CMConn
		err error
	}
	accepted := make(chan res, 1)
	go func() {
		r, err := l.Accept(ctx)
		if err != nil {
			accepted <- res{err: err}
			return
		}
		c, err := r.Accept(ctx, eb.qp, []byte("rep"), nil)
		accepted <- res{c, err}
	}()
	ca, err := cmOf(t, a).CMConnect(ctx, ea.qp, d.NICs[0].Addr, l.Port(), []byte("req"), nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	rb := <-accepted
	if rb.err != nil {
		t.Fatalf("accept: %v", rb.err)
	}
	if ea.qp.State() != verbs.QPSRTS || eb.qp.State() != verbs.QPSRTS {
		t.Fatalf("QPs in %v and %v, want RTS", ea.qp.State(), eb.qp.State())
	}
	port := l.Port()

	b.Close() // B goes: the daemon disconnects its connection, closes its listener
	select {
	case <-ca.Done():
	case <-ctx.Done():
		t.Fatal("the peer of a client that went: Done not closed")
	}
	if st := ea.qp.State(); st != verbs.QPSErr {
		t.Errorf("peer's QP in %v after the disconnect, want ERR", st)
	}
	// The port is free for another client once the daemon reaped B.
	c := open(t, d, 0)
	deadline := time.Now().Add(5 * time.Second)
	for {
		l2, err := cmOf(t, c).CMListen(port)
		if err == nil {
			l2.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listening on port %d of a client that went: %v", port, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCMConnectCancel: a CMConnect to a port nobody answers ends with its
// context, and the QP is the client's again.
func TestCMConnectCancel(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2})
	a := open(t, d, 0)
	ea := newEnd(t, a, verbs.QPTypeRC, 4096)
	// NIC 1 has no listener on the port: it rejects (no such service),
	// so point at an address nobody serves instead.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := cmOf(t, a).CMConnect(ctx, ea.qp, rnicdtest.LoopbackAddr(), 7174, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CMConnect to nobody: %v, want the context's deadline", err)
	}
}
