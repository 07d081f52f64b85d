package rdmacm

import (
	"bytes"
	"errors"
	"net/netip"
	"sync"
	"testing"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/cm"
)

// udQP returns a UD QP in RTS with rdma_cm's Q_Key, as rdma_create_qp on
// a RDMA_PS_UDP id leaves it.
func (s *side) udQP(t *testing.T) *nic.QP {
	t.Helper()
	qp, err := s.n.CreateQP(s.pd, nic.QPInit{Type: verbs.QPTypeUD, SendCQ: s.cq, RecvCQ: s.cq,
		Cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		a    verbs.QPAttr
		mask verbs.QPAttrMask
	}{
		{verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, QKey: UDPQKey}, verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrQKey},
		{verbs.QPAttr{State: verbs.QPSRTR}, verbs.AttrState},
		{verbs.QPAttr{State: verbs.QPSRTS}, verbs.AttrState | verbs.AttrSQPSN},
	}
	for _, s := range steps {
		if err := qp.Modify(&s.a, s.mask); err != nil {
			t.Fatal(err)
		}
	}
	return qp
}

// TestUDResolveSend: SIDR_REQ/SIDR_REP between two embedded NICs give the
// client the server QP's number, Q_Key and an address vector with which a
// UD SEND reaches it; both private data directions arrive; no QP changes
// state.
func TestUDResolveSend(t *testing.T) {
	a, b := newPair(t, nil, nil)
	ctx := ctxT(t)
	l, err := b.cm.ListenUD(7174)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	qb, qa := b.udQP(t), a.udQP(t)
	var wg sync.WaitGroup
	var serr error
	var seen netip.AddrPort
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := l.Accept(ctx)
		if err != nil {
			serr = err
			return
		}
		if !bytes.HasPrefix(r.PrivateData(), []byte("udaddy")) || len(r.PrivateData()) != MaxSIDRUserData {
			serr = errors.New("SIDR_REQ private data differs")
		}
		seen = r.RemoteAddr()
		if r.LocalAddr() != netip.AddrPortFrom(addrB, 7174) {
			serr = errors.New("local address " + r.LocalAddr().String())
		}
		if err := r.Accept(qb, []byte("here")); err != nil {
			serr = err
		}
	}()
	peer, err := a.cm.ResolveUD(ctx, addrB, 7174, []byte("udaddy"))
	wg.Wait()
	if err != nil || serr != nil {
		t.Fatalf("resolve: client %v, server %v", err, serr)
	}
	if peer.QPN != qb.QPN() || peer.QKey != UDPQKey || !bytes.HasPrefix(peer.PrivateData, []byte("here")) ||
		seen != netip.AddrPortFrom(addrA, peer.Local.Port()) || peer.Remote != netip.AddrPortFrom(addrB, 7174) {
		t.Fatalf("peer %+v, server saw %v", peer, seen)
	}
	ah, err := a.n.CreateAH(a.pd, peer.AV)
	if err != nil {
		t.Fatal(err)
	}
	copy(a.mem.Bytes(), "datagram after SIDR")
	if err := qb.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{Addr: b.mr.Addr(), Length: 40 + 64, LKey: b.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	if err := qa.PostSend(&verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, AH: ah.AV(),
		RemoteQPN: peer.QPN, RemoteQKey: peer.QKey,
		SGL: []verbs.SGE{{Addr: a.mr.Addr(), Length: 19, LKey: a.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	waitWC(t, b.cq, 1)
	waitWC(t, a.cq, 2)
	if !bytes.Equal(b.mem.Bytes()[40:40+19], a.mem.Bytes()[:19]) {
		t.Fatal("UD payload differs")
	}
	if qa.State() != verbs.QPSRTS || qb.State() != verbs.QPSRTS {
		t.Fatalf("states %v %v", qa.State(), qb.State())
	}
}

// TestUDUnreachable: no listener on the port gives "service ID not
// supported", a rejecting listener "rejected" with its private data.
func TestUDUnreachable(t *testing.T) {
	a, b := newPair(t, nil, nil)
	ctx := ctxT(t)
	_, err := a.cm.ResolveUD(ctx, addrB, 9, nil)
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Status != cm.SIDRUnsupported {
		t.Fatalf("no listener: %v", err)
	}
	l, err := b.cm.ListenUD(9)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if r, err := l.Accept(ctx); err == nil {
			r.Reject([]byte("go away"))
		}
	}()
	_, err = a.cm.ResolveUD(ctx, addrB, 9, nil)
	if !errors.As(err, &ue) || ue.Status != cm.SIDRRejected || !bytes.HasPrefix(ue.PrivateData, []byte("go away")) {
		t.Fatalf("rejected: %v", err)
	}
	// A TCP-space listener on the same port does not answer UD requests.
	tl, err := b.cm.Listen(10)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if _, err = a.cm.ResolveUD(ctx, addrB, 10, nil); !errors.As(err, &ue) || ue.Status != cm.SIDRUnsupported {
		t.Fatalf("TCP listener answered a SIDR_REQ: %v", err)
	}
}

// TestUDTimeout: every SIDR_REQ lost, ResolveUD ends with ErrTimeout after
// the retries.
func TestUDTimeout(t *testing.T) {
	a, _ := newPair(t, func(f []byte) bool { return attrOf(f) == cm.AttrSIDRREQ }, nil)
	if _, err := a.cm.ResolveUD(ctxT(t), addrB, 7174, nil); !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v, want ErrTimeout", err)
	}
	if c := a.cm.Manager().Counters(); c.Retransmits != 4 || c.Timeouts != 1 {
		t.Fatalf("counters %+v", c)
	}
}
