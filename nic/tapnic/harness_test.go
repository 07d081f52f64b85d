package tapnic_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/tap/taptest"
	"github.com/rnic/rnic/transport/pcap"
)

// openNIC opens a TAP-mode NIC on a new TAP on tn's bridge.
func openNIC(t *testing.T, tn *taptest.Net, name string, pcap *pcap.Writer, prefixes ...netip.Prefix) *tapnic.NIC {
	t.Helper()
	n, err := tapnic.Open(tapnic.Config{Name: name, TAP: "t-" + name, Netns: tn.Name, Bridge: tn.Bridge,
		Prefixes: prefixes, MTU: 1500, Pcap: pcap})
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// end is one side of an RC connection: a QP with a registered buffer.
type end struct {
	n   *tapnic.NIC
	pd  *nic.PD
	mr  *nic.MR
	cq  *nic.CQ
	qp  *nic.QP
	buf []byte
}

const bufSize = 64 << 10

func newEnd(t *testing.T, n *tapnic.NIC) *end {
	t.Helper()
	e := &end{n: n}
	sh, err := memory.NewShared(bufSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	e.buf = sh.Bytes()
	if e.pd, err = n.AllocPD(); err != nil {
		t.Fatal(err)
	}
	access := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	if e.mr, err = n.RegMRShared(e.pd, sh, 0, bufSize, access); err != nil {
		t.Fatal(err)
	}
	if e.cq, err = n.CreateCQ(64); err != nil {
		t.Fatal(err)
	}
	if e.qp, err = n.CreateQP(e.pd, nic.QPInit{Type: verbs.QPTypeRC, SendCQ: e.cq, RecvCQ: e.cq,
		Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
		t.Fatal(err)
	}
	return e
}

// connect brings me's QP to RTS toward peer's, over the GID of peerAddr;
// timeout and retry are the requester's retransmission settings.
func connect(t *testing.T, me, peer *end, peerAddr netip.Addr, timeout, retry uint8) {
	t.Helper()
	connectAV(t, me, peer, verbs.AddressVector{DGID: verbs.GIDFromAddr(peerAddr),
		SGIDIndex: gidIndex(me.n, peerAddr), HopLimit: 64, PortNum: 1}, timeout, retry)
}

// connectAV brings me's QP to RTS toward peer's through av.
func connectAV(t *testing.T, me, peer *end, av verbs.AddressVector, timeout, retry uint8) {
	t.Helper()
	access := memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	steps := []struct {
		attr verbs.QPAttr
		mask verbs.QPAttrMask
	}{
		{verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: access},
			verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags},
		{verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: peer.qp.QPN(), RQPSN: 100,
			MaxDestRdAtomic: 4, MinRNRTimer: 12, AV: av},
			verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN |
				verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer},
		{verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 100, Timeout: timeout, RetryCnt: retry, RNRRetry: 7, MaxRdAtomic: 4},
			verbs.AttrState | verbs.AttrSQPSN | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry |
				verbs.AttrMaxQPRdAtomic},
	}
	for _, s := range steps {
		if err := me.qp.Modify(&s.attr, s.mask); err != nil {
			t.Fatalf("modify to %v: %v", s.attr.State, err)
		}
	}
}

// gidIndex is the index of n's GID of peer's family.
func gidIndex(n *tapnic.NIC, peer netip.Addr) uint8 {
	i, err := n.GIDIndex(n.AddrFor(peer))
	if err != nil {
		panic(err)
	}
	return uint8(i)
}

// pair connects a fresh QP on a with a fresh QP on b (b reached at bAddr,
// a at aAddr).
func pair(t *testing.T, a, b *tapnic.NIC, aAddr, bAddr netip.Addr, timeout, retry uint8) (*end, *end) {
	x, y := newEnd(t, a), newEnd(t, b)
	connect(t, x, y, bAddr, timeout, retry)
	connect(t, y, x, aAddr, timeout, retry)
	return x, y
}

// post posts wr on e's QP and returns its completion.
func post(t *testing.T, e *end, wr verbs.SendWR, within time.Duration) verbs.WC {
	t.Helper()
	wr.Flags |= verbs.SendSignaled
	if err := e.qp.PostSend(&wr); err != nil {
		t.Fatalf("post %v: %v", wr.Opcode, err)
	}
	return poll(t, e, within)
}

func poll(t *testing.T, e *end, within time.Duration) verbs.WC {
	t.Helper()
	wcs := make([]verbs.WC, 1)
	deadline := time.Now().Add(within)
	for e.cq.Poll(wcs) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no completion within %v", within)
		}
		time.Sleep(200 * time.Microsecond)
	}
	return wcs[0]
}

func sge(e *end, off, n int) []verbs.SGE {
	return []verbs.SGE{{Addr: e.mr.Addr() + uint64(off), Length: uint32(n), LKey: e.mr.LKey()}}
}
