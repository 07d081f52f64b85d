package tapnic_test

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/tap/taptest"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/tsharktest"
)

// udEnd is a UD QP at RTS on a NIC, with a registered buffer.
type udEnd struct {
	e  *end
	qp *nic.QP
}

func newUDEnd(t *testing.T, n *tapnic.NIC) *udEnd {
	t.Helper()
	e := newEnd(t, n)
	qp, err := n.CreateQP(e.pd, nic.QPInit{Type: verbs.QPTypeUD, SendCQ: e.cq, RecvCQ: e.cq,
		Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		attr verbs.QPAttr
		mask verbs.QPAttrMask
	}{
		{verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, QKey: 0x11111111}, verbs.AttrPort | verbs.AttrPKeyIndex | verbs.AttrQKey},
		{verbs.QPAttr{State: verbs.QPSRTR}, 0},
		{verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1}, verbs.AttrSQPSN},
	} {
		if err := qp.Modify(&s.attr, s.mask|verbs.AttrState); err != nil {
			t.Fatal(err)
		}
	}
	return &udEnd{e: e, qp: qp}
}

// waitMdb waits until the bridge's multicast database does (want) or does
// not hold group on port, and returns it.
func waitMdb(t *testing.T, tn *taptest.Net, port string, group netip.Addr, want bool) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := tn.Command("bridge", "mdb", "show", "dev", tn.Bridge).CombinedOutput()
		has := strings.Contains(string(out), "port "+port+" grp "+group.String())
		if has == want || time.Now().After(deadline) {
			if has != want {
				t.Fatalf("bridge mdb: group %v on %s: %v, want %v\n%s", group, port, has, want, out)
			}
			return string(out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMcastAcrossTAPs: a UD QP attached to a group makes its NIC report
// the join (IGMPv3); the namespace's bridge, with IGMP snooping on, learns
// the group on that NIC's port and forwards the group's datagrams there;
// another NIC's datagram to the group (DestQP 0xFFFFFF) arrives. The
// detach reports the leave and the bridge forgets the group (fast leave).
// tshark decodes every frame, the IGMP reports included (the
// namespace's kernel reports groups of its own too: only b's count).
func TestMcastAcrossTAPs(t *testing.T) {
	tn := taptest.New(t, 68)
	tn.IP(t, "link", "set", tn.Bridge, "type", "bridge", "mcast_snooping", "1")
	path := filepath.Join(t.TempDir(), "b.pcap")
	pw, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	a := openNIC(t, tn, "rnica", nil, tn.Addr4(2))
	b := openNIC(t, tn, "rnicb", pw, tn.Addr4(3))
	tn.IP(t, "link", "set", "dev", "t-rnicb", "type", "bridge_slave", "fastleave", "on")
	sender, recv := newUDEnd(t, a), newUDEnd(t, b)
	group := netip.MustParseAddr("230.68.0.1")
	gid := verbs.GIDFromAddr(group)
	if err := recv.qp.AttachMcast(gid, 0); err != nil {
		t.Fatal(err)
	}
	waitMdb(t, tn, "t-rnicb", group, true)

	copy(sender.e.buf, "over the bridge")
	if err := recv.qp.PostRecv(&verbs.RecvWR{ID: 7, SGL: sge(recv.e, 0, 1024)}); err != nil {
		t.Fatal(err)
	}
	ah, err := a.CreateAH(sender.e.pd, verbs.AddressVector{DGID: gid, SGIDIndex: gidIndex(a, tn.Addr4(3).Addr()), HopLimit: 64, PortNum: 1})
	if err != nil {
		t.Fatal(err)
	}
	wr := verbs.SendWR{ID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: sge(sender.e, 0, 15),
		AH: ah.AV(), RemoteQPN: verbs.MulticastQPN, RemoteQKey: 0x11111111}
	if err := sender.qp.PostSend(&wr); err != nil {
		t.Fatal(err)
	}
	if wc := poll(t, sender.e, 5*time.Second); wc.Status != verbs.WCSuccess {
		t.Fatalf("send: %+v", wc)
	}
	wc := poll(t, recv.e, 5*time.Second)
	if wc.Status != verbs.WCSuccess || wc.ByteLen != 40+15 || string(recv.e.buf[40:55]) != "over the bridge" {
		t.Fatalf("receive: %+v %q", wc, recv.e.buf[40:55])
	}

	if err := recv.qp.DetachMcast(gid, 0); err != nil {
		t.Fatal(err)
	}
	waitMdb(t, tn, "t-rnicb", group, false)
	a.Close()
	b.Close()
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	tsharktest.Check(t, path, tsharktest.Options{})
	var types []string
	for _, r := range tsharktest.Fields(t, path, tsharktest.Options{Filter: "igmp.type == 0x22 && ip.src == " + tn.Addr4(3).Addr().String()}, "igmp.record_type", "igmp.maddr") {
		types = append(types, r["igmp.record_type"]+" "+r["igmp.maddr"])
	}
	if got := strings.Join(types, ","); got != "4 230.68.0.1,3 230.68.0.1" {
		t.Errorf("IGMPv3 reports in the capture: %q, want the join (4) and the leave (3)", got)
	}
}
