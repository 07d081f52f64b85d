// The acceptor answers the connector's first message at once, as perftest
// -R's server does: it posts its send once that receive completes, before
// its accept has returned (CI saw ib_write_lat -R's server fail so).

package client_test

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rdmacm"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/cm/mad"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/udp"
)

// TestCMAcceptorAnswersFirstMessage: over RoCEv2 the connector's first RTU
// is lost, so the acceptor's accept is still waiting (for the RTU its REP
// retry brings) when the connector's first SEND arrives; its QP is in RTS
// since before the REP went, and its rings must say so. Over iWARP the
// engine moves the QP at the peer's RTR; the client asks the daemon
// before it fails a post.
func TestCMAcceptorAnswersFirstMessage(t *testing.T) {
	t.Run("roce", func(t *testing.T) {
		d := rnicdtest.Start(t, rnicdtest.Options{})
		a := rtuLosingDevice(t)
		answerFirstMessage(t, a, open(t, d, 0), d.Addr(0), true)
	})
	t.Run("iwarp", func(t *testing.T) {
		d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2, IWARP: true})
		for i := 0; i < 5; i++ {
			answerFirstMessage(t, open(t, d, 0), open(t, d, 1), d.Addr(1), false)
		}
	})
}

// rtuLosingDevice is an in-process RoCEv2 NIC with rdma_cm whose link
// drops the first RTU it sends.
func rtuLosingDevice(t *testing.T) ibv.Device {
	addr := rnicdtest.LoopbackAddr()
	ep, err := udp.Open(udp.Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	var dropped atomic.Bool
	link := transport.WithFaults(ep, clock.NewReal(), transport.FaultConfig{
		Script: func(dir transport.Direction, _ int, frame []byte) transport.Verdict {
			if dir == transport.AtoB && isRTU(frame) && !dropped.Swap(true) {
				return transport.Drop()
			}
			return transport.Pass()
		}})
	n, err := embedded.Open(embedded.UDPConfig{Name: "lossy", Addr: addr, Link: link})
	if err != nil {
		t.Fatal(err)
	}
	dev, err := rdmacm.LocalWith(n, rdmacm.Config{}, nic.IBVOptions{})
	if err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

// isRTU reports whether frame carries a CM RTU (a MAD on QP1).
func isRTU(frame []byte) bool {
	var f wire.Frame
	if f.Decode(frame, 0) != nil || f.Packet.BTH().DestQP() != 1 {
		return false
	}
	m, err := mad.ParseMAD(f.Packet.Payload())
	return err == nil && m.AttrID() == mad.AttrRTU
}

// answerFirstMessage connects a to a listener of b (at bAddr), whose
// client answers the first SEND it receives before its accept returns.
// ringRTS: b's rings must say RTS by the time that SEND has arrived.
func answerFirstMessage(t *testing.T, a, b ibv.Device, bAddr netip.Addr, ringRTS bool) {
	ea, eb := newEnd(t, a, verbs.QPTypeRC, 4096), newEnd(t, b, verbs.QPTypeRC, 4096)
	ctx := ctxFor(t, 30*time.Second)
	l, err := cmOf(t, b).CMListen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// B's receive is posted in INIT, before the accept, as perftest does.
	if err := eb.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.LocalWrite},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		t.Fatalf("B to INIT: %v", err)
	}
	if err := eb.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: sge(eb, 0, 64)}); err != nil {
		t.Fatal(err)
	}
	accepted := make(chan error, 1)
	go func() { accepted <- acceptOne(ctx, l, eb.qp) }()

	ca, err := cmOf(t, a).CMConnect(ctx, ea.qp, bAddr, l.Port(), nil, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer ca.Disconnect(context.Background())
	if err := ea.qp.PostRecv(&verbs.RecvWR{ID: 2, SGL: sge(ea, 64, 64)}); err != nil {
		t.Fatal(err)
	}
	if err := ea.qp.PostSend(&verbs.SendWR{ID: 3, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: sge(ea, 0, 8)}); err != nil {
		t.Fatalf("A's first SEND: %v", err)
	}
	expectWC(t, eb.cq, verbs.WCSuccess, verbs.WCRecv)
	select {
	case err := <-accepted:
		if ringRTS {
			t.Fatalf("the accept returned (%v) before the lost RTU's retry: the test proves nothing", err)
		}
		accepted <- err
	default:
	}
	rings, _ := client.QPRings(eb.qp)
	if st := verbs.QPState(rings.State.Load()); ringRTS && st != verbs.QPSRTS {
		t.Errorf("B's rings say %v once A's first message arrived, want RTS", st)
	}
	if err := eb.qp.PostSend(&verbs.SendWR{ID: 4, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: sge(eb, 64, 8)}); err != nil {
		t.Fatalf("B's answer, posted once A's message arrived: %v", err)
	}
	// A: its SEND and B's answer; B: its answer's SEND.
	for _, cq := range []ibv.CQ{ea.cq, ea.cq, eb.cq} {
		if wc := poll(t, cq); wc.Status != verbs.WCSuccess {
			t.Fatalf("completion %v %v (wr %#x)", wc.Status, wc.Opcode, wc.WRID)
		}
	}
	if err := <-accepted; err != nil {
		t.Fatalf("accept: %v", err)
	}
}

func acceptOne(ctx context.Context, l ibv.CMListener, qp ibv.QP) error {
	r, err := l.Accept(ctx)
	if err != nil {
		return err
	}
	_, err = r.Accept(ctx, qp, nil, nil)
	return err
}
