package roce

import (
	"testing"
	"time"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
)

// pipePair is two stacks on an in-process pipe and the real clock, with
// a local ACK timeout of about 1 ms and retry_cnt 2: three timeouts end
// a request that gets no answer.
func pipePair(t *testing.T) (a, b *node, ea, eb *transport.PipeEnd) {
	t.Helper()
	o := defaultOpts()
	o.timeout, o.retryCnt = 8, 2
	ea, eb = transport.NewPipe()
	clk := clock.NewReal()
	a = newNodeOn(t, "A", ea, clk, 1, o, nil)
	b = newNodeOn(t, "B", eb, clk, 2, o, nil)
	connectQP(t, a, b, o)
	connectQP(t, b, a, o)
	t.Cleanup(func() {
		a.stack.Close()
		b.stack.Close()
		ea.Close()
		eb.Close()
	})
	return a, b, ea, eb
}

// stall makes n's receiver wait on the returned gate: the frames sent to
// n queue on the pipe, as behind a process that gets no CPU.
func stall(n *node, e *transport.PipeEnd) (gate chan struct{}) {
	gate = make(chan struct{})
	e.SetReceiver(func(f []byte) {
		<-gate
		n.stack.Input(f)
	})
	return gate
}

// waitWC waits up to 10 s for a completion on cq.
func waitWC(t *testing.T, cq *testCQ) verbs.WC {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if w := cq.take(); len(w) > 0 {
			return w[0]
		}
	}
	t.Fatal("no completion within 10 s")
	return verbs.WC{}
}

// TestStarvedReceiverNoRetryExc: a receiver that does not run for a
// hundred local ACK timeouts (its frames wait on the lossless pipe) is not
// a lost packet: the WRITE completes once it runs, and no timeout counts
// against retry_cnt. Either receiver: the responder's (the request waits)
// or the requester's own (the ACK waits).
func TestStarvedReceiverNoRetryExc(t *testing.T) {
	for _, starved := range []string{"responder", "requester"} {
		t.Run(starved, func(t *testing.T) {
			a, b, ea, eb := pipePair(t)
			var gate chan struct{}
			if starved == "responder" {
				gate = stall(b, eb)
			} else {
				gate = stall(a, ea)
			}
			fill(a.buf[:256], 5)
			if err := a.qp.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
				SGL: []verbs.SGE{a.sge(0, 256)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // about 100 timeouts
			close(gate)
			wc := waitWC(t, a.scq)
			ctr := a.stack.Counters()
			if wc.Status != verbs.WCSuccess {
				t.Fatalf("WRITE completed %v (timeouts %d, deferred %d)", wc.Status,
					ctr.Get(RetransmitTimeouts), ctr.Get(TimeoutsDeferred))
			}
			if ctr.Get(TimeoutsDeferred) == 0 {
				t.Error("no timeout was deferred in 100 ms of a stalled receiver")
			}
			if n := ctr.Get(RetransmitTimeouts); n > 2 {
				t.Errorf("%d timeouts counted, more than retry_cnt", n)
			}
			a.stack.Close() // no more frames: the data is in place
			if string(b.buf[:256]) != string(a.buf[:256]) {
				t.Error("the WRITE did not land")
			}
		})
	}
}

// TestDeadPeerRetryExc: a peer whose end of the pipe closed drops what it
// is sent; that is a loss, and the requester fails the WRITE with
// RETRY_EXC_ERR after retry_cnt+1 timeouts, none deferred.
func TestDeadPeerRetryExc(t *testing.T) {
	a, b, _, eb := pipePair(t)
	eb.Close()
	if err := a.qp.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{a.sge(0, 8)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()}); err != nil {
		t.Fatal(err)
	}
	wc := waitWC(t, a.scq)
	ctr := a.stack.Counters()
	if wc.Status != verbs.WCRetryExcErr {
		t.Fatalf("WRITE to a dead peer completed %v, want RETRY_EXC_ERR", wc.Status)
	}
	if n, d := ctr.Get(RetransmitTimeouts), ctr.Get(TimeoutsDeferred); n != 3 || d != 0 {
		t.Errorf("%d timeouts (%d deferred), want retry_cnt+1 = 3 and none deferred", n, d)
	}
}
