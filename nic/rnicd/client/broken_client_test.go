// A client that breaks the data-plane protocol (out-of-range ring indices,
// malformed WQEs, a runaway consumer index) harms only itself: its QP goes
// to ERR with QP_FATAL, the daemon counts it and goes on serving others.

package client_test

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

// waitEvent waits for an event of type typ on dev.
func waitEvent(t *testing.T, dev ibv.Device, typ verbs.AsyncEvent) ibv.Event {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case e, ok := <-dev.Events():
			if !ok {
				t.Fatalf("events closed while waiting for %v", typ)
			}
			if e.Type == typ {
				return e
			}
		case <-timeout:
			t.Fatalf("no %v event within 5s", typ)
		}
	}
}

// stillServes checks that two fresh clients of d can still talk.
func stillServes(t *testing.T, d *rnicdtest.Daemon) {
	t.Helper()
	a, b := newEnd(t, open(t, d, 0), verbs.QPTypeRC, 4096), newEnd(t, open(t, d, 0), verbs.QPTypeRC, 4096)
	connect(t, a, b, nil)
	copy(a.buf, "still serving")
	if err := a.qp.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL: sge(a, 0, 13), RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}); err != nil {
		t.Fatal(err)
	}
	expectWC(t, a.cq, verbs.WCSuccess, verbs.WCRDMAWrite)
	if string(b.buf[:13]) != "still serving" {
		t.Errorf("after the broken client, a WRITE delivered %q", b.buf[:13])
	}
}

func TestBrokenClient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(r *client.WorkRingsView, bell func())
		stat   func(server.Stats) uint64
	}{
		{"send producer runs ahead", func(r *client.WorkRingsView, bell func()) {
			r.SQ.Prod.Store(r.SQ.Prod.Load() + r.SQ.Slots() + 5)
			bell()
		}, func(s server.Stats) uint64 { return s.RingIndexErrors }},
		{"receive producer runs behind", func(r *client.WorkRingsView, bell func()) {
			r.RQ.Prod.Store(r.RQ.Prod.Load() - 1)
			bell()
		}, func(s server.Stats) uint64 { return s.RingIndexErrors }},
		{"send WQE with 65535 SGEs", func(r *client.WorkRingsView, bell func()) {
			p := r.SQ.Prod.Load()
			slot := r.SQ.Slot(p)
			clear(slot)
			binary.LittleEndian.PutUint16(slot[10:], 0xffff)
			r.SQ.Prod.Store(p + 1)
			bell()
		}, func(s server.Stats) uint64 { return s.BadWQEs }},
		{"receive WQE with 2^32-1 SGEs", func(r *client.WorkRingsView, bell func()) {
			p := r.RQ.Prod.Load()
			slot := r.RQ.Slot(p)
			binary.LittleEndian.PutUint32(slot[8:], 0xffffffff)
			r.RQ.Prod.Store(p + 1)
			bell()
		}, func(s server.Stats) uint64 { return s.BadWQEs }},
		{"send WQE the NIC refuses", func(r *client.WorkRingsView, bell func()) {
			p := r.SQ.Prod.Load()
			slot := r.SQ.Slot(p)
			clear(slot)
			slot[8] = 99 // no such opcode
			r.SQ.Prod.Store(p + 1)
			bell()
		}, func(s server.Stats) uint64 { return s.BadWQEs }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := rnicdtest.Start(t, rnicdtest.Options{})
			a, b := newEnd(t, open(t, d, 0), verbs.QPTypeRC, 4096), newEnd(t, open(t, d, 0), verbs.QPTypeRC, 4096)
			connect(t, a, b, nil)
			rings, bell := client.QPRings(a.qp)
			tc.break_(rings, bell)
			e := waitEvent(t, a.dev, verbs.EventQPFatal)
			if e.QP != a.qp {
				t.Errorf("QP_FATAL for %v, want the broken QP", e.QP)
			}
			if st := a.qp.State(); st != verbs.QPSErr {
				t.Errorf("broken QP in %v, want ERR", st)
			}
			if n := tc.stat(d.Server.Stats()); n != 1 {
				t.Errorf("counted %d, want 1", n)
			}
			stillServes(t, d)
		})
	}
}

// TestRunawayCQConsumer: a consumer index ahead of the producer makes the
// daemon see a full ring; the CQ overruns as an unpolled one does, and
// only this client's QP suffers.
func TestRunawayCQConsumer(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a, b := newEnd(t, open(t, d, 0), verbs.QPTypeRC, 4096), newEnd(t, open(t, d, 0), verbs.QPTypeRC, 4096)
	connect(t, a, b, nil)
	ring := client.CQRing(a.cq)
	ring.Cons.Store(ring.Prod.Load() + 1000)
	// More completions than the daemon's CQ holds (256), as the send
	// queue lets them in.
	for posted, deadline := 0, time.Now().Add(5*time.Second); posted < 400 && time.Now().Before(deadline); {
		err := a.qp.PostSend(&verbs.SendWR{ID: uint64(posted), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGL: sge(a, 0, 8), RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()})
		if errors.Is(err, verbs.ErrQueueFull) {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		posted++
	}
	waitEvent(t, a.dev, verbs.EventCQErr)
	if err := a.cq.Err(); err == nil {
		t.Error("CQ.Err after an overrun: nil")
	}
	if d.Server.Stats().RingIndexErrors == 0 {
		t.Error("the runaway consumer index was not counted")
	}
	stillServes(t, d)
}
