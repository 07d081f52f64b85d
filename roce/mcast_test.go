package roce

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// udMember is a further UD QP on a node's stack and memory, with queues
// of its own.
type udMember struct {
	qp  *QP
	rcq *testCQ
	rq  *testRQ
}

func addUDQP(t *testing.T, n *node, qpn, qkey uint32) *udMember {
	t.Helper()
	m := &udMember{rcq: &testCQ{}, rq: &testRQ{}}
	eng, err := n.stack.CreateQP(&verbs.QPConfig{
		Type: verbs.QPTypeUD, QPN: qpn, PD: 1, Memory: n.mem, PortMTU: verbs.MTU1024,
		SendCQ: &testCQ{}, RecvCQ: m.rcq, RQ: m.rq,
		Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	m.qp = eng.(*QP)
	for _, s := range []struct {
		cur  verbs.QPState
		attr verbs.QPAttr
		mask verbs.QPAttrMask
	}{
		{verbs.QPSReset, verbs.QPAttr{State: verbs.QPSInit, QKey: qkey}, verbs.AttrQKey},
		{verbs.QPSInit, verbs.QPAttr{State: verbs.QPSRTR}, 0},
		{verbs.QPSRTR, verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1}, verbs.AttrSQPSN},
	} {
		if err := m.qp.Modify(s.cur, &s.attr, s.mask|verbs.AttrState); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// recv posts a receive of length bytes at off of n's buffer.
func (m *udMember) recv(n *node, id uint64, off, length int) {
	m.rq.q = append(m.rq.q, verbs.RecvWR{ID: id, SGL: []verbs.SGE{n.sge(off, length)}})
	m.qp.RecvPosted()
}

var testGroup = netip.MustParseAddr("230.1.2.3")

func attach(t *testing.T, n *node, qpn uint32) {
	t.Helper()
	if err := n.stack.AttachMcast(verbs.GIDFromAddr(testGroup), qpn); err != nil {
		t.Fatal(err)
	}
}

// mcastSend posts a datagram of n bytes from a's buffer to the group.
func mcastSend(t *testing.T, a *node, id uint64, n int, destQP, qkey uint32) {
	av := &verbs.AddressVector{DGID: verbs.GIDFromAddr(testGroup), HopLimit: 64}
	a.post(t, verbs.SendWR{ID: id, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, n)}, AH: av, RemoteQPN: destQP, RemoteQKey: qkey})
}

// IBTA §10.5: a datagram to a group with DestQP 0xFFFFFF reaches every QP
// attached to it, each checking its own Q_Key; the GRH area holds the IP
// header, the group its destination. Detached QPs get nothing more.
func TestMcastDeliversToEveryAttachedQP(t *testing.T) {
	h := newHarness(t, udOpts())
	a, b := h.a, h.b
	b2 := addUDQP(t, b, 0x202, 0x11111111)
	other := addUDQP(t, b, 0x203, 0x22222222) // attached, another Q_Key
	attach(t, b, b.qp.QPN())
	attach(t, b, b2.qp.QPN())
	attach(t, b, other.qp.QPN())
	copy(a.buf, "to the group")
	b.recv(1, 0x1000, 256)
	b2.recv(b, 2, 0x2000, 256)
	other.recv(b, 3, 0x3000, 256)
	mcastSend(t, a, 1, 12, verbs.MulticastQPN, 0x11111111)
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCSend})
	wantWC(t, b.rcq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 40 + 12})
	wantWC(t, b2.rcq.take(), verbs.WC{WRID: 2, Opcode: verbs.WCRecv, ByteLen: 40 + 12})
	wantWC(t, other.rcq.take())
	for _, off := range []int{0x1000, 0x2000} {
		if string(b.buf[off+40:off+52]) != "to the group" {
			t.Fatalf("payload at %#x: %q", off, b.buf[off+40:off+52])
		}
		if !bytes.Equal(b.buf[off+36:off+40], testGroup.AsSlice()) {
			t.Fatalf("GRH destination %v, want the group", b.buf[off+36:off+40])
		}
	}
	if got := b.stack.ctr.Get(QKeyViolation); got != 1 {
		t.Fatalf("qkey_violation %d, want 1 (the QP with another Q_Key)", got)
	}

	b.stack.DetachMcast(verbs.GIDFromAddr(testGroup), b2.qp.QPN())
	b.recv(4, 0x1000, 256)
	b2.recv(b, 5, 0x2000, 256)
	mcastSend(t, a, 2, 12, verbs.MulticastQPN, 0x11111111)
	h.run()
	wantWC(t, b.rcq.take(), verbs.WC{WRID: 4, Opcode: verbs.WCRecv, ByteLen: 40 + 12})
	wantWC(t, b2.rcq.take())

	b.stack.DetachMcast(verbs.GIDFromAddr(testGroup), b.qp.QPN())
	b.stack.DetachMcast(verbs.GIDFromAddr(testGroup), other.qp.QPN())
	before := b.stack.ctr.Wire(wire.ErrBadIPHeader)
	mcastSend(t, a, 3, 12, verbs.MulticastQPN, 0x11111111)
	h.run()
	wantWC(t, b.rcq.take())
	if b.stack.ctr.Wire(wire.ErrBadIPHeader) != before+1 {
		t.Fatal("a datagram to a group the device left was not counted as not its own")
	}
}

// Only DestQP 0xFFFFFF is a multicast delivery: a datagram to the group
// naming a QPN is dropped, even the QPN of an attached QP.
func TestMcastNeedsMulticastQPN(t *testing.T) {
	h := newHarness(t, udOpts())
	a, b := h.a, h.b
	attach(t, b, b.qp.QPN())
	b.recv(1, 0, 256)
	mcastSend(t, a, 1, 8, b.qp.QPN(), 0x11111111)
	h.run()
	wantWC(t, b.rcq.take())
	if b.stack.ctr.Get(NoQP) != 1 {
		t.Fatalf("no_qp %d, want 1", b.stack.ctr.Get(NoQP))
	}
}

// As rxe, whose multicast the kernel loops back: the sending device's own
// attached QPs get the datagram too, the sender included, when the link
// does not loop it (the simulated wire).
func TestMcastReachesSendersOwnQPs(t *testing.T) {
	h := newHarness(t, udOpts())
	a, b := h.a, h.b
	a2 := addUDQP(t, a, 0x302, 0x11111111)
	attach(t, a, a.qp.QPN())
	attach(t, a, a2.qp.QPN())
	attach(t, b, b.qp.QPN())
	a.recv(1, 0x1000, 256)
	a2.recv(a, 2, 0x2000, 256)
	b.recv(3, 0, 256)
	copy(a.buf, "loop")
	mcastSend(t, a, 1, 4, verbs.MulticastQPN, 0x11111111)
	h.run()
	wantWC(t, a.rcq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRecv, ByteLen: 44})
	wantWC(t, a2.rcq.take(), verbs.WC{WRID: 2, Opcode: verbs.WCRecv, ByteLen: 44})
	wantWC(t, b.rcq.take(), verbs.WC{WRID: 3, Opcode: verbs.WCRecv, ByteLen: 44})
	if string(a.buf[0x2000+40:0x2000+44]) != "loop" {
		t.Fatal("looped payload differs")
	}
}

// The Ethernet address of a group is the IP multicast mapping.
func TestMcastMAC(t *testing.T) {
	for _, c := range []struct {
		ip  string
		mac [6]byte
	}{
		{"230.1.2.3", [6]byte{0x01, 0x00, 0x5e, 0x01, 0x02, 0x03}},
		{"239.255.255.250", [6]byte{0x01, 0x00, 0x5e, 0x7f, 0xff, 0xfa}},
		{"ff0e::1:2:3", [6]byte{0x33, 0x33, 0x00, 0x02, 0x00, 0x03}},
	} {
		if got := mcastMAC(netip.MustParseAddr(c.ip)); got != c.mac {
			t.Errorf("%s: %x, want %x", c.ip, got, c.mac)
		}
	}
}
