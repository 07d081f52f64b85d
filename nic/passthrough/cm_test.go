//go:build verbs

package passthrough

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// cmEnd is one end of a CM test: a PD, a CQ, a buffer and an RC QP in
// RESET with a receive posted.
type cmEnd struct {
	d   *device
	cq  ibv.CQ
	mem []byte
	mr  ibv.MR
	qp  ibv.QP
}

func newCMEnd(t *testing.T, d *device) *cmEnd {
	t.Helper()
	e := &cmEnd{d: d}
	pd, err := d.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	if e.cq, err = d.CreateCQ(16); err != nil {
		t.Fatal(err)
	}
	buf, err := d.AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { buf.Close() })
	e.mem = buf.Bytes()
	if e.mr, err = d.RegMR(pd, e.mem, memory.LocalWrite|memory.RemoteWrite|memory.RemoteRead); err != nil {
		t.Fatal(err)
	}
	if e.qp, err = d.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: e.cq, RecvCQ: e.cq,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *cmEnd) sge(off, n int) []verbs.SGE {
	return []verbs.SGE{{Addr: e.mr.Addr() + uint64(off), Length: uint32(n), LKey: e.mr.LKey()}}
}

// TestCMLoopback: connect two QPs through rdma_cm on the device's own
// address, send a message each way, and disconnect from the active side:
// both see Done and both QPs end in ERR. Then a rejected request comes
// back as *RejectError with the private data.
func TestCMLoopback(t *testing.T) {
	srvDev, cliDev := openDevice(t), openDevice(t)
	addr := deviceAddr(t, srvDev)
	lst, err := srvDev.CMListen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer lst.Close()
	if lst.Port() == 0 {
		t.Fatal("listener on port 0 reports port 0")
	}
	srv, cli := newCMEnd(t, srvDev), newCMEnd(t, cliDev)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	type accepted struct {
		c   ibv.CMConn
		req ibv.CMRequest
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		req, err := lst.Accept(ctx)
		if err != nil {
			ch <- accepted{err: err}
			return
		}
		// A receive before the accept, as rping posts one before
		// rdma_accept, on a QP in INIT (as rdma_create_qp leaves it).
		init := verbs.QPAttr{State: verbs.QPSInit, PortNum: 1}
		if err := srv.qp.Modify(&init, verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
			ch <- accepted{err: err}
			return
		}
		if err := srv.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: srv.sge(0, 64)}); err != nil {
			ch <- accepted{err: err}
			return
		}
		c, err := req.Accept(ctx, srv.qp, []byte("server says hello"), nil)
		ch <- accepted{c, req, err}
	}()
	// The client's QP stays in RESET until CMConnect; its receive comes
	// after (the server's SEND waits in RNR retries meanwhile).
	cc, err := cliDev.CMConnect(ctx, cli.qp, addr, lst.Port(), []byte("client says hello"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.qp.PostRecv(&verbs.RecvWR{ID: 2, SGL: cli.sge(0, 64)}); err != nil {
		t.Fatal(err)
	}
	a := <-ch
	if a.err != nil {
		t.Fatal(a.err)
	}
	sc := a.c
	if !bytes.HasPrefix(a.req.PrivateData(), []byte("client says hello")) || !bytes.HasPrefix(cc.PrivateData(), []byte("server says hello")) {
		t.Errorf("private data: request %q, reply %q", a.req.PrivateData(), cc.PrivateData())
	}
	if cc.RemoteAddr().Addr() != addr || cc.RemoteAddr().Port() != lst.Port() || sc.LocalAddr().Port() != lst.Port() {
		t.Errorf("addresses: client %v → %v, server %v ← %v", cc.LocalAddr(), cc.RemoteAddr(), sc.LocalAddr(), sc.RemoteAddr())
	}
	if !srvDev.iwarp && (cc.RemoteQPN() != srv.qp.QPN() || sc.RemoteQPN() != cli.qp.QPN()) {
		t.Errorf("remote QPNs: client sees %#x (server QP %#x), server sees %#x (client QP %#x)",
			cc.RemoteQPN(), srv.qp.QPN(), sc.RemoteQPN(), cli.qp.QPN())
	}
	if cc.QP() != cli.qp || sc.QP() != srv.qp {
		t.Error("CMConn.QP is not the QP connected")
	}
	for _, e := range []*cmEnd{cli, srv} {
		if st := e.qp.State(); st != verbs.QPSRTS {
			t.Errorf("QP %#x in %v after connecting", e.qp.QPN(), st)
		}
	}

	copy(cli.mem[1024:], "ping over rdma_cm")
	copy(srv.mem[1024:], "pong over rdma_cm")
	for _, e := range []*cmEnd{cli, srv} {
		if err := e.qp.PostSend(&verbs.SendWR{ID: 10, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: e.sge(1024, 17)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []*cmEnd{cli, srv} {
		byID(t, waitWCs(t, e.cq, 2))
	}
	if string(srv.mem[:17]) != "ping over rdma_cm" || string(cli.mem[:17]) != "pong over rdma_cm" {
		t.Errorf("received %q and %q", srv.mem[:17], cli.mem[:17])
	}

	if err := cc.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sc.Done():
	case <-ctx.Done():
		t.Fatal("the passive side never saw the disconnect")
	}
	for _, e := range []*cmEnd{cli, srv} {
		if st := e.qp.State(); st != verbs.QPSErr {
			t.Errorf("QP %#x in %v after the disconnect, want ERR", e.qp.QPN(), st)
		}
	}
	if err := sc.Disconnect(ctx); err != nil {
		t.Errorf("Disconnect after the peer's: %v", err)
	}

	// A rejected request.
	rej := newCMEnd(t, cliDev)
	go func() {
		req, err := lst.Accept(ctx)
		if err == nil {
			req.Reject([]byte("no thanks"))
		}
	}()
	_, err = cliDev.CMConnect(ctx, rej.qp, addr, lst.Port(), nil, nil)
	var re *RejectError
	if !errors.As(err, &re) || !errors.Is(err, ibv.ErrRejected) {
		t.Fatalf("connect to a rejecting listener: %v, want *RejectError (ibv.ErrRejected)", err)
	}
	if !bytes.HasPrefix(re.PrivateData, []byte("no thanks")) {
		t.Errorf("reject private data %q", re.PrivateData)
	}
}
