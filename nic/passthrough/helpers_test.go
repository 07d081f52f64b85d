//go:build verbs

// Test helpers: the device under test (the first libibverbs device, or
// $RNIC_PT_DEVICE; skipped where there is none, as on a host without RDMA
// devices: these tests run inside the lab guests), its IPv4 address (from
// its Ethernet device, or $RNIC_PT_ADDR), and a loopback pair of RC QPs.

package passthrough

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// deviceName returns the device the tests use, skipping without one.
func deviceName(t testing.TB) string {
	t.Helper()
	names, err := Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	if name := os.Getenv("RNIC_PT_DEVICE"); name != "" {
		return name
	}
	if len(names) == 0 {
		t.Skip("no RDMA device (ibv_get_device_list is empty): run the tagged tests in a lab guest with rxe or siw")
	}
	return names[0]
}

// openDevice opens the test device, closed at the end of the test.
func openDevice(t testing.TB) *device {
	t.Helper()
	name := deviceName(t)
	dv, err := Open(name)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	d := dv.(*device)
	t.Cleanup(func() {
		if err := d.Close(); err != nil && !errors.Is(err, verbs.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// deviceAddr returns the IPv4 address of d's Ethernet device.
func deviceAddr(t testing.TB, d *device) netip.Addr {
	t.Helper()
	if s := os.Getenv("RNIC_PT_ADDR"); s != "" {
		return netip.MustParseAddr(s)
	}
	name := d.netdev()
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatalf("%s: its Ethernet device %q: %v", d.name, name, err)
	}
	addrs, _ := ifc.Addrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			return p.Addr()
		}
	}
	t.Fatalf("%s: no IPv4 address on %s", d.name, name)
	return netip.Addr{}
}

// skipIWARP skips a test that connects QPs by hand.
func skipIWARP(t testing.TB, d *device) {
	t.Helper()
	if d.iwarp {
		t.Skipf("%s is iWARP: its QPs connect only through rdma_cm", d.name)
	}
}

// loop is a PD, one CQ, a registered buffer and two RC QPs of one device
// connected to each other, as ibv_rc_pingpong connects two.
type loop struct {
	d     *device
	pd    ibv.PD
	cq    ibv.CQ
	buf   ibv.Buffer
	mem   []byte
	mr    ibv.MR
	a, b  ibv.QP
	gid   int
	psnA  uint32
	psnB  uint32
	depth int
}

const loopBufSize = 1 << 20

func newLoop(t testing.TB, d *device, depth int) *loop {
	t.Helper()
	l := &loop{d: d, depth: depth, psnA: 0x123456, psnB: 0xabcdef}
	var err error
	if !d.iwarp {
		if l.gid, err = d.GIDIndex(deviceAddr(t, d)); err != nil {
			t.Fatal(err)
		}
	}
	if l.pd, err = d.AllocPD(); err != nil {
		t.Fatal(err)
	}
	if l.cq, err = d.CreateCQ(4 * depth); err != nil {
		t.Fatal(err)
	}
	if l.buf, err = d.AllocBuffer(loopBufSize); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.buf.Close() })
	l.mem = l.buf.Bytes()
	access := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead
	if d.attr.AtomicCap != verbs.AtomicNone {
		access |= memory.RemoteAtomic
	}
	if l.mr, err = d.RegMR(l.pd, l.mem, access); err != nil {
		t.Fatal(err)
	}
	l.a, l.b = l.qp(t), l.qp(t)
	l.pairUp(t, l.a, l.b)
	return l
}

// pairUp connects q and r to each other: by hand on RoCE, through
// rdma_cm on iWARP (the only way there).
func (l *loop) pairUp(t testing.TB, q, r ibv.QP) {
	t.Helper()
	if !l.d.iwarp {
		l.connect(t, q, r.QPN(), l.psnA, l.psnB)
		l.connect(t, r, q.QPN(), l.psnB, l.psnA)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lst, err := l.d.CMListen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer lst.Close()
	errc := make(chan error, 1)
	go func() {
		req, err := lst.Accept(ctx)
		if err == nil {
			_, err = req.Accept(ctx, r, nil, nil)
		}
		errc <- err
	}()
	if _, err := l.d.CMConnect(ctx, q, deviceAddr(t, l.d), lst.Port(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func (l *loop) qp(t testing.TB) ibv.QP {
	t.Helper()
	q, err := l.d.CreateQP(l.pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: l.cq, RecvCQ: l.cq,
		Cap: verbs.QPCap{MaxSendWR: uint32(l.depth), MaxRecvWR: uint32(l.depth), MaxSendSGE: 2, MaxRecvSGE: 2}})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// connect takes q from RESET to RTS toward remote QPN rqpn (on this
// device), with ibv_rc_pingpong's attributes.
func (l *loop) connect(t testing.TB, q ibv.QP, rqpn, sqpsn, rqpsn uint32) {
	t.Helper()
	access := memory.RemoteWrite | memory.RemoteRead
	if l.d.attr.AtomicCap != verbs.AtomicNone {
		access |= memory.RemoteAtomic
	}
	port, err := l.d.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	gid, err := l.d.QueryGID(1, l.gid)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		attr verbs.QPAttr
		mask verbs.QPAttrMask
	}{
		{verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: access},
			verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags},
		{verbs.QPAttr{State: verbs.QPSRTR, PathMTU: port.ActiveMTU, DestQPN: rqpn, RQPSN: rqpsn, MaxDestRdAtomic: 4, MinRNRTimer: 12,
			AV: verbs.AddressVector{DGID: gid, SGIDIndex: uint8(l.gid), HopLimit: 1, PortNum: 1}},
			verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer},
		{verbs.QPAttr{State: verbs.QPSRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: sqpsn, MaxRdAtomic: 4},
			verbs.AttrState | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrSQPSN | verbs.AttrMaxQPRdAtomic},
	}
	for _, s := range steps {
		if err := q.Modify(&s.attr, s.mask); err != nil {
			t.Fatalf("QP %#x to %v: %v", q.QPN(), s.attr.State, err)
		}
	}
	if st := q.State(); st != verbs.QPSRTS {
		t.Fatalf("QP %#x in %v after the move to RTS", q.QPN(), st)
	}
}

// sge is n bytes of l's buffer at off.
func (l *loop) sge(off, n int) []verbs.SGE {
	return []verbs.SGE{{Addr: l.mr.Addr() + uint64(off), Length: uint32(n), LKey: l.mr.LKey()}}
}

// waitWCs polls cq until it has n completions or 20 s pass (TCG guests
// are slow).
func waitWCs(t testing.TB, cq ibv.CQ, n int) []verbs.WC {
	t.Helper()
	out := make([]verbs.WC, 0, n)
	wcs := make([]verbs.WC, n)
	deadline := time.Now().Add(20 * time.Second)
	for len(out) < n {
		k := cq.Poll(wcs[:n-len(out)])
		out = append(out, wcs[:k]...)
		if k == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d completions after 20 s: %+v", len(out), n, out)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return out
}

// byID indexes completions by WR ID, failing on a non-success one.
func byID(t testing.TB, wcs []verbs.WC) map[uint64]verbs.WC {
	t.Helper()
	m := make(map[uint64]verbs.WC, len(wcs))
	for _, wc := range wcs {
		if wc.Status != verbs.WCSuccess {
			t.Fatalf("WR %#x completed with %v (vendor error %#x)", wc.WRID, wc.Status, wc.VendorErr)
		}
		m[wc.WRID] = wc
	}
	return m
}

func netip4(a, b, c, d byte) netip.Addr { return netip.AddrFrom4([4]byte{a, b, c, d}) }
