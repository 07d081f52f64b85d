package rdmacm

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/cm"
)

// moveExternal takes an external QP through INIT, RTR and RTS with a,
// as a program does with rdma_init_qp_attr's attributes.
func moveExternal(t *testing.T, qp *nic.QP, a ibv.ExternalQPAttrs) {
	t.Helper()
	if err := toInit(qp, memory.LocalWrite|memory.RemoteWrite|memory.RemoteRead); err != nil {
		t.Fatal(err)
	}
	if err := toRTS(qp, a); err != nil {
		t.Fatal(err)
	}
}

// TestExternalQP: an external QP on both sides. The passive side takes
// the REQ's attributes before it accepts, the active side the REP's;
// neither CM moves a QP (RESET at the REP), the RTU waits for Establish
// (no ESTABLISHED on the passive side before it), the attributes pair
// up, a SEND crosses, and the disconnect leaves both QPs in RTS.
func TestExternalQP(t *testing.T) {
	a, b := newPair(t, nil, nil)
	ctx := ctxT(t)
	l, err := b.cm.Listen(7174)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	qa, qb := a.qp(t), b.qp(t)
	type accepted struct {
		conn  *Conn
		attrs ibv.ExternalQPAttrs
		err   error
	}
	done := make(chan accepted, 1)
	go func() {
		r, err := l.Accept(ctx)
		if err != nil {
			done <- accepted{err: err}
			return
		}
		at, err := r.QPAttrs()
		if err != nil {
			done <- accepted{err: err}
			return
		}
		if err := toInit(qb, memory.LocalWrite); err != nil {
			done <- accepted{err: err}
			return
		}
		if err := toRTS(qb, at); err != nil {
			done <- accepted{err: err}
			return
		}
		cn, err := r.AcceptExternal(ctx, qb.QPN(), []byte("ext rep"), nil)
		done <- accepted{conn: cn, attrs: at, err: err}
	}()
	resp, err := a.cm.ConnectExternal(ctx, qa.QPN(), addrB, 7174, []byte("ext req"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if qa.State() != verbs.QPSReset {
		t.Fatalf("active QP in %v at the REP: the CM moved it", qa.State())
	}
	if !bytes.HasPrefix(resp.PrivateData(), []byte("ext rep")) || resp.RemoteQPN() != qb.QPN() {
		t.Fatalf("REP: private data %q, remote QPN %#x (want %#x)", resp.PrivateData()[:8], resp.RemoteQPN(), qb.QPN())
	}
	select {
	case s := <-done:
		t.Fatalf("the passive side finished before the RTU: %+v", s)
	case <-time.After(100 * time.Millisecond):
	}
	ra := resp.QPAttrs()
	moveExternal(t, qa, ra)
	ca, err := resp.Establish()
	if err != nil {
		t.Fatal(err)
	}
	s := <-done
	if s.err != nil {
		t.Fatal(s.err)
	}
	rb := s.attrs
	if ra.DestQPN != qb.QPN() || rb.DestQPN != qa.QPN() || ra.SQPSN != rb.RQPSN || rb.SQPSN != ra.RQPSN {
		t.Fatalf("attributes do not pair up: active %+v, passive %+v", ra, rb)
	}
	if ca.QP() != nil || s.conn.QP() != nil {
		t.Fatal("an external connection has a QP of the CM's")
	}
	copy(a.mem.Bytes(), "over external QPs")
	if err := qb.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{Addr: b.mr.Addr(), Length: 64, LKey: b.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	if err := qa.PostSend(&verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: a.mr.Addr(), Length: 17, LKey: a.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	waitWC(t, b.cq, 1)
	waitWC(t, a.cq, 2)
	if !bytes.Equal(b.mem.Bytes()[:17], a.mem.Bytes()[:17]) {
		t.Fatal("SEND payload differs")
	}
	if err := ca.Disconnect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.conn.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("passive side never saw the DREQ")
	}
	if qa.State() != verbs.QPSRTS || qb.State() != verbs.QPSRTS {
		t.Fatalf("after the disconnect: %v %v, want RTS (the program's to move)", qa.State(), qb.State())
	}
}

// TestEstablishTwice: Establish sends one RTU; a second fails.
func TestEstablishTwice(t *testing.T) {
	a, b := newPair(t, nil, nil)
	ctx := ctxT(t)
	l, err := b.cm.Listen(7175)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	qb := b.qp(t)
	go func() {
		if r, err := l.Accept(ctx); err == nil {
			r.Accept(ctx, qb, nil, nil)
		}
	}()
	resp, err := a.cm.ConnectExternal(ctx, a.qp(t).QPN(), addrB, 7175, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resp.Establish(); err != nil {
		t.Fatal(err)
	}
	if _, err := resp.Establish(); err == nil {
		t.Fatal("a second Establish succeeded")
	} else if !errors.Is(err, cm.ErrState) {
		t.Fatalf("second Establish: %v, want cm.ErrState", err)
	}
}

// TestPrepareAccept: PrepareAccept leaves the QP in RTS before the REP
// goes (rdma_accept returns so), and Accept with it connects.
func TestPrepareAccept(t *testing.T) {
	a, b := newPair(t, nil, nil)
	ctx := ctxT(t)
	l, err := b.cm.Listen(7176)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	qb := b.qp(t)
	done := make(chan error, 1)
	go func() {
		r, err := l.Accept(ctx)
		if err == nil {
			if err = r.PrepareAccept(qb, &ConnParam{ACKTimeout: 21}); err == nil {
				if qb.State() != verbs.QPSRTS {
					t.Errorf("after PrepareAccept: %v, want RTS", qb.State())
				}
				_, err = r.Accept(ctx, qb, nil, &ConnParam{ACKTimeout: 21})
			}
		}
		done <- err
	}()
	if _, err := a.cm.Connect(ctx, a.qp(t), addrB, 7176, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
