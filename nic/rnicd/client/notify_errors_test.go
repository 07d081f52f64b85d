// Completion events, verbs errors (synchronous and as completions), and
// per-client limits, through the daemon.

package client_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

func waitNotify(cq ibv.CQ, d time.Duration) bool {
	select {
	case _, ok := <-cq.Notify():
		return ok
	case <-time.After(d):
		return false
	}
}

func TestCQNotify(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a := newEnd(t, open(t, d, 0), verbs.QPTypeRC, 1<<14)
	b := newEnd(t, open(t, d, 0), verbs.QPTypeRC, 1<<14)
	connect(t, a, b, nil)
	send := func(id uint64, flags verbs.SendFlags) {
		t.Helper()
		if err := b.qp.PostRecv(&verbs.RecvWR{ID: id, SGL: sge(b, 0, 64)}); err != nil {
			t.Fatal(err)
		}
		if err := a.qp.PostSend(&verbs.SendWR{ID: id, Opcode: verbs.WRSend, Flags: flags | verbs.SendSignaled, SGL: sge(a, 0, 8)}); err != nil {
			t.Fatal(err)
		}
		expectWC(t, a.cq, verbs.WCSuccess, verbs.WCSend)
	}

	// Armed for any completion: the next one fires, once.
	if err := b.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	send(1, 0)
	if !waitNotify(b.cq, 5*time.Second) {
		t.Fatal("armed CQ: no completion event within 5s")
	}
	expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecv)
	send(2, 0) // not armed: no event
	expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecv)
	if waitNotify(b.cq, 50*time.Millisecond) {
		t.Error("an event without an arm")
	}

	// Armed for solicited completions (a switch from any: the daemon
	// re-arms before ReqNotify returns): an unsolicited completion
	// reaches the ring (Poll sees it) without an event; a solicited one
	// fires.
	if err := b.cq.ReqNotify(true); err != nil {
		t.Fatal(err)
	}
	send(3, 0)
	expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecv)
	if waitNotify(b.cq, 100*time.Millisecond) {
		t.Error("solicited-only arm fired for an unsolicited completion")
	}
	send(4, verbs.SendSolicited)
	if !waitNotify(b.cq, 5*time.Second) {
		t.Fatal("solicited-only arm: no event for a solicited completion within 5s")
	}
	if wc := expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecv); wc.WRID != 4 {
		t.Errorf("completion of wr %d, want 4", wc.WRID)
	}
	// Re-armed so, as an event loop does (no switch this time), and back
	// to any completion.
	if err := b.cq.ReqNotify(true); err != nil {
		t.Fatal(err)
	}
	send(5, 0)
	expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecv)
	if waitNotify(b.cq, 50*time.Millisecond) {
		t.Error("solicited-only arm, again: fired for an unsolicited completion")
	}
	if err := b.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	send(6, 0)
	if !waitNotify(b.cq, 5*time.Second) {
		t.Fatal("re-armed for any completion: no event within 5s")
	}
	expectWC(t, b.cq, verbs.WCSuccess, verbs.WCRecv)

	// Destroying a CQ closes its Notify.
	cq, err := b.dev.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	cq.ReqNotify(false)
	if err := cq.Destroy(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-cq.Notify():
		if ok {
			t.Error("a destroyed CQ's Notify delivered an event")
		}
	case <-time.After(5 * time.Second):
		t.Error("a destroyed CQ's Notify is still open")
	}
	if err := cq.ReqNotify(false); !errors.Is(err, verbs.ErrDestroyed) {
		t.Errorf("ReqNotify on a destroyed CQ: %v, want ErrDestroyed", err)
	}
}

func TestVerbsErrors(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	devA, devB := open(t, d, 0), open(t, d, 0)

	t.Run("synchronous", func(t *testing.T) {
		a := newEnd(t, devA, verbs.QPTypeRC, 4096)
		var pe *verbs.PostError
		// In RESET (and INIT, RTR) posting to the send queue fails.
		err := a.qp.PostSend(&verbs.SendWR{Opcode: verbs.WRSend, SGL: sge(a, 0, 1)})
		if !errors.Is(err, verbs.ErrInvalidState) || !errors.As(err, &pe) || pe.Index != 0 {
			t.Errorf("post send in RESET: %v, want a PostError wrapping ErrInvalidState", err)
		}
		if err := a.qp.PostRecv(&verbs.RecvWR{}); !errors.Is(err, verbs.ErrInvalidState) {
			t.Errorf("post recv in RESET: %v, want ErrInvalidState", err)
		}
		// A transition nic refuses, with nic's message.
		err = a.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTS}, verbs.AttrState)
		if !errors.Is(err, verbs.ErrInvalid) && !errors.Is(err, verbs.ErrInvalidState) {
			t.Errorf("RESET→RTS: %v, want an invalid-argument error", err)
		}
		b := newEnd(t, devB, verbs.QPTypeRC, 4096)
		connect(t, a, b, nil)
		tooMany := make([]verbs.SGE, 5)
		if err := a.qp.PostSend(&verbs.SendWR{Opcode: verbs.WRSend, SGL: tooMany}); !errors.Is(err, verbs.ErrInvalid) {
			t.Errorf("5 SGEs on a QP of 4: %v, want ErrInvalid", err)
		}
		if err := a.qp.PostSend(&verbs.SendWR{Opcode: verbs.WRAtomicFetchAdd, SGL: sge(a, 0, 8), RemoteAddr: 3}); !errors.Is(err, verbs.ErrInvalid) {
			t.Errorf("misaligned atomic: %v, want ErrInvalid", err)
		}
		if err := a.qp.PostSend(&verbs.SendWR{Opcode: verbs.WRSend, Flags: verbs.SendInline, Inline: make([]byte, 65)}); !errors.Is(err, verbs.ErrInvalid) {
			t.Errorf("65 inline bytes on a QP of 64: %v, want ErrInvalid", err)
		}
		if _, err := devA.RegMR(a.pd, make([]byte, 64), memory.LocalWrite); !errors.Is(err, verbs.ErrInvalid) ||
			!strings.Contains(err.Error(), "AllocBuffer") {
			t.Errorf("RegMR of heap memory: %v, want ErrInvalid naming AllocBuffer", err)
		}
		if _, err := devA.CreateQP(a.pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: b.cq, RecvCQ: a.cq, Cap: defaultCap}); !errors.Is(err, ibv.ErrForeign) {
			t.Errorf("CreateQP with another device's CQ: %v, want ErrForeign", err)
		}
		if err := a.pd.Dealloc(); !errors.Is(err, verbs.ErrBusy) {
			t.Errorf("dealloc a PD in use: %v, want ErrBusy", err)
		}
		if err := b.mr.Dereg(); err != nil {
			t.Fatal(err)
		}
		if err := b.mr.Dereg(); !errors.Is(err, verbs.ErrInvalid) {
			t.Errorf("dereg twice: %v, want ErrInvalid (no such MR)", err)
		}
	})

	t.Run("bad lkey", func(t *testing.T) {
		a, b := newEnd(t, devA, verbs.QPTypeRC, 4096), newEnd(t, devB, verbs.QPTypeRC, 4096)
		connect(t, a, b, nil)
		if err := a.qp.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{{Addr: a.mr.Addr(), Length: 8, LKey: a.mr.LKey() ^ 0x100}}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}); err != nil {
			t.Fatal(err)
		}
		expectWC(t, a.cq, verbs.WCLocProtErr, 0)
	})

	t.Run("remote access", func(t *testing.T) {
		a, b := newEnd(t, devA, verbs.QPTypeRC, 4096), newEnd(t, devB, verbs.QPTypeRC, 4096)
		connect(t, a, b, nil)
		buf, _ := devB.AllocBuffer(4096)
		ro, err := devB.RegMR(b.pd, buf.Bytes(), memory.LocalWrite|memory.RemoteRead)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.qp.PostSend(&verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
			SGL: sge(a, 0, 8), RemoteAddr: ro.Addr(), RKey: ro.RKey()}); err != nil {
			t.Fatal(err)
		}
		expectWC(t, a.cq, verbs.WCRemAccessErr, 0)
	})
}

func TestLimits(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{Limits: server.Limits{MaxQPs: 2, MaxMRs: 2, MaxMRBytes: 1 << 20}})
	dev := open(t, d, 0)
	pd, _ := dev.AllocPD()
	cq, _ := dev.CreateCQ(16)
	for i := range 3 {
		_, err := dev.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
		if i < 2 && err != nil {
			t.Fatalf("QP %d: %v", i, err)
		}
		if i == 2 && (!errors.Is(err, client.ErrLimit) || !errors.Is(err, verbs.ErrNoMemory) || !strings.Contains(err.Error(), "2 QPs per client")) {
			t.Errorf("third QP: %v, want ErrLimit and ErrNoMemory naming the limit", err)
		}
	}
	small, _ := dev.AllocBuffer(4096)
	for i := range 3 {
		_, err := dev.RegMR(pd, small.Bytes(), memory.LocalWrite)
		if i < 2 && err != nil {
			t.Fatalf("MR %d: %v", i, err)
		}
		if i == 2 && (!errors.Is(err, client.ErrLimit) || !strings.Contains(err.Error(), "--max-mrs")) {
			t.Errorf("third MR: %v, want ErrLimit naming --max-mrs", err)
		}
	}
	// Another client has limits of its own.
	other := open(t, d, 0)
	opd, _ := other.AllocPD()
	big, _ := other.AllocBuffer(2 << 20)
	if _, err := other.RegMR(opd, big.Bytes()[:4096], memory.LocalWrite); !errors.Is(err, client.ErrLimit) ||
		!strings.Contains(err.Error(), "bytes of registered memory") {
		t.Errorf("MR in a 2 MiB buffer with 1 MiB allowed: %v, want ErrLimit on registered bytes", err)
	}
	if got := d.Server.Stats().LimitRejections; got != 3 {
		t.Errorf("limit rejections %d, want 3", got)
	}
}

// TestQueueFull: the send ring, the daemon's batch of 16 and the NIC's
// queue together hold between max_send_wr and twice that plus 16; beyond,
// PostSend fails with ErrQueueFull.
func TestQueueFull(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	a, b := newEnd(t, open(t, d, 0), verbs.QPTypeRC, 4096), newEnd(t, open(t, d, 0), verbs.QPTypeRC, 4096)
	connect(t, a, b, nil)
	// b goes to ERR: a's WRITEs are never acknowledged and stay
	// outstanding for the retry timeout (minutes at timeout 14 × 7).
	if err := b.qp.Modify(&verbs.QPAttr{State: verbs.QPSReset}, verbs.AttrState); err != nil {
		t.Fatal(err)
	}
	depth := int(a.qp.Cap().MaxSendWR)
	posted := 0
	var err error
	for range 3 * depth {
		if err = a.qp.PostSend(&verbs.SendWR{Opcode: verbs.WRRDMAWrite, SGL: sge(a, 0, 8), RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}); err != nil {
			break
		}
		posted++
		time.Sleep(50 * time.Microsecond) // let the drainer keep up, to reach the NIC's depth too
	}
	if !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("after %d posts: %v, want ErrQueueFull", posted, err)
	}
	if posted < depth || posted > 2*depth+16 {
		t.Errorf("%d WRs posted before the queue was full, want %d..%d", posted, depth, 2*depth+16)
	}
}
