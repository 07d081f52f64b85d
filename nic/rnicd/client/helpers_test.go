// Helpers of the client tests: a daemon in the test, clients of it, QPs
// connected through it.

package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
)

const allAccess = memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic

// open opens NIC i of d as a client.
func open(t testing.TB, d *rnicdtest.Daemon, i int) ibv.Device {
	t.Helper()
	dev, err := ibv.Open(d.Spec(i))
	if err != nil {
		t.Fatalf("open %v: %v", d.Spec(i), err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

// end is one side of a connection: a QP with its CQ and a registered
// buffer.
type end struct {
	dev ibv.Device
	pd  ibv.PD
	cq  ibv.CQ
	qp  ibv.QP
	buf []byte
	mem ibv.Buffer // buf's, the program's to close
	mr  ibv.MR
}

var defaultCap = verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 64}

func newEnd(t testing.TB, dev ibv.Device, typ verbs.QPType, size int) *end {
	t.Helper()
	e := &end{dev: dev}
	var err error
	if e.pd, err = dev.AllocPD(); err != nil {
		t.Fatal(err)
	}
	b, err := dev.AllocBuffer(size)
	if err != nil {
		t.Fatal(err)
	}
	e.buf, e.mem = b.Bytes(), b
	if e.mr, err = dev.RegMR(e.pd, e.buf, allAccess); err != nil {
		t.Fatal(err)
	}
	if e.cq, err = dev.CreateCQ(256); err != nil {
		t.Fatal(err)
	}
	if e.qp, err = dev.CreateQP(e.pd, ibv.QPInit{Type: typ, SendCQ: e.cq, RecvCQ: e.cq, Cap: defaultCap}); err != nil {
		t.Fatal(err)
	}
	return e
}

// gid returns the first GID of the end's device.
func (e *end) gid() verbs.AddressVector {
	return verbs.AddressVector{DGID: e.dev.GIDs()[0], HopLimit: 64, PortNum: 1}
}

// connect takes a and b (RC or UC) to RTS, each aimed at the other.
// rts, if set, adjusts the RTS attributes (timeouts).
func connect(t testing.TB, a, b *end, rts func(*verbs.QPAttr)) {
	t.Helper()
	for _, p := range [][2]*end{{a, b}, {b, a}} {
		me, peer := p[0], p[1]
		rc := me.qp.Type() == verbs.QPTypeRC
		mask := verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags
		if err := me.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic}, mask); err != nil {
			t.Fatalf("INIT: %v", err)
		}
		attr := verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: peer.qp.QPN(), RQPSN: 100, AV: peer.gid(),
			MaxDestRdAtomic: 4, MinRNRTimer: 1}
		mask = verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN
		if rc {
			mask |= verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer
		}
		if err := me.qp.Modify(&attr, mask); err != nil {
			t.Fatalf("RTR: %v", err)
		}
		attr = verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 100, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 4}
		mask = verbs.AttrState | verbs.AttrSQPSN
		if rc {
			mask |= verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrMaxQPRdAtomic
		}
		if rts != nil {
			rts(&attr)
		}
		if err := me.qp.Modify(&attr, mask); err != nil {
			t.Fatalf("RTS: %v", err)
		}
	}
}

// poll waits up to 10 s for one completion.
func poll(t testing.TB, cq ibv.CQ) verbs.WC {
	t.Helper()
	wc, ok := pollWithin(cq, 10*time.Second)
	if !ok {
		t.Fatalf("no completion within 10s (CQ error: %v)", cq.Err())
	}
	return wc
}

func pollWithin(cq ibv.CQ, d time.Duration) (verbs.WC, bool) {
	wcs := make([]verbs.WC, 1)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cq.Poll(wcs) == 1 {
			return wcs[0], true
		}
		time.Sleep(20 * time.Microsecond)
	}
	return verbs.WC{}, false
}

// expectWC polls one completion and checks its status and opcode.
func expectWC(t testing.TB, cq ibv.CQ, status verbs.WCStatus, op verbs.WCOpcode) verbs.WC {
	t.Helper()
	wc := poll(t, cq)
	if wc.Status != status || (status == verbs.WCSuccess && wc.Opcode != op) {
		t.Fatalf("completion %v %v (wr %#x), want %v %v", wc.Status, wc.Opcode, wc.WRID, status, op)
	}
	return wc
}

func sge(e *end, off, n int) []verbs.SGE {
	return []verbs.SGE{{Addr: e.mr.Addr() + uint64(off), Length: uint32(n), LKey: e.mr.LKey()}}
}

func isGone(err error) bool { return errors.Is(err, client.ErrDaemonGone) }
