package iwarp

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream/kerneltcp"
)

// waitCQ waits (wall clock) until cq holds n completions.
func waitCQ(t *testing.T, cq *testCQ, n int) []verbs.WC {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		cq.mu.Lock()
		if len(cq.wcs) >= n {
			w := cq.wcs
			cq.wcs = nil
			cq.mu.Unlock()
			return w
		}
		cq.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d completions", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestKernelTCP runs the engine over kernel TCP sockets on loopback, IPv4
// and IPv6: connect, Send, Write, a large Read, then Disconnect.
func TestKernelTCP(t *testing.T) {
	for _, lo := range []string{"127.0.0.1", "::1"} {
		t.Run(lo, func(t *testing.T) {
			addr := netip.MustParseAddr(lo)
			clk := clock.NewReal()
			mk := func(name string, qpn uint32) *node {
				nd := &node{name: name, addr: addr, scq: &testCQ{}, rcq: &testCQ{}, rq: &testRQ{}}
				var err error
				nd.stack, err = NewStack(Config{Clock: clk, Network: &kerneltcp.Network{}, Addr: addr, MSS: 16 << 10,
					OnConnEvent: func(e ConnEvent) { nd.mu.Lock(); nd.conn = append(nd.conn, e); nd.mu.Unlock() }})
				if err != nil {
					t.Fatal(err)
				}
				nd.mem, _ = memory.NewTable(memory.Config{})
				nd.buf = make([]byte, bufSize)
				nd.mr, _ = nd.mem.Register(1, nd.buf, 0x10000, memory.LocalWrite|memory.RemoteWrite|memory.RemoteRead)
				eng, err := nd.stack.CreateQP(&verbs.QPConfig{Type: verbs.QPTypeRC, QPN: qpn, PD: 1, Memory: nd.mem,
					SendCQ: nd.scq, RecvCQ: nd.rcq, RQ: nd.rq, Cap: verbs.QPCap{MaxSendWR: 64, MaxSendSGE: 2}})
				if err != nil {
					t.Fatal(err)
				}
				nd.qp = eng.(*QP)
				if err := nd.qp.Modify(verbs.QPSReset, &verbs.QPAttr{State: verbs.QPSInit, AccessFlags: memory.RemoteWrite | memory.RemoteRead},
					verbs.AttrState|verbs.AttrAccessFlags); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nd.stack.Close)
				return nd
			}
			a, b := mk("A", 1), mk("B", 2)
			accepted := make(chan error, 1)
			l, err := b.stack.Listen(netip.AddrPortFrom(addr, 0), func(r *ConnRequest) {
				accepted <- r.Accept(b.qp.QPN(), []byte("ok"), 4, 4)
			})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			done := make(chan ConnectResult, 1)
			if err := a.stack.Connect(a.qp.QPN(), l.Addr(), []byte("hi"), 4, 4, func(r ConnectResult) { done <- r }); err != nil {
				t.Fatal(err)
			}
			if err := <-accepted; err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.Err != nil || string(r.PrivateData) != "ok" {
				t.Fatalf("connect: %+v", r)
			}
			const n = 200000
			fill(a.buf[:n], 3)
			fill(b.buf[n:2*n], 4)
			b.recv(1, 2*n, n)
			a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, n)}})
			a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, n)}, RemoteAddr: b.va(3 * n), RKey: b.mr.RKey()})
			a.post(t, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(n, n)}, RemoteAddr: b.va(n), RKey: b.mr.RKey()})
			wantWC(t, waitCQ(t, a.scq, 3), verbs.WC{WRID: 1, Opcode: verbs.WCSend}, verbs.WC{WRID: 2, Opcode: verbs.WCRDMAWrite},
				verbs.WC{WRID: 3, Opcode: verbs.WCRDMARead, ByteLen: n})
			wantWC(t, waitCQ(t, b.rcq, 1), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: n})
			if !bytes.Equal(b.buf[2*n:3*n], a.buf[:n]) || !bytes.Equal(a.buf[n:2*n], b.buf[n:2*n]) {
				t.Fatal("send or read data mismatch")
			}
			// The WRITE completed locally; its data has landed once the
			// READ behind it (same stream, in order) was answered.
			if !bytes.Equal(b.buf[3*n:4*n], a.buf[:n]) {
				t.Fatal("write data mismatch")
			}
			if err := a.stack.Disconnect(a.qp.QPN()); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for b.qp.State() != verbs.QPSErr || a.qp.State() != verbs.QPSErr {
				if time.Now().After(deadline) {
					t.Fatalf("states after disconnect: %v %v", a.qp.State(), b.qp.State())
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}
