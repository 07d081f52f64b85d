// RoCEv2 multicast UD at the DUT's receiver: the DUT attaches its UD QP
// to a group (ibv_attach_mcast) and the tester sends datagrams to the
// group's IP address and Ethernet address with DestQP 0xFFFFFF. Delivered
// to the attached QP with its Q_Key checked, GRH and source QPN in the
// completion (IBTA Vol 1 §10.5, §10.2.4, §11.4.1.1, §11.4.2.1); not
// delivered once it detached; dropped when the Q_Key is wrong or the
// DestQP is not the multicast QPN (§9.6.1.3.2). Where the DUT counts a
// drop (rnic's qkey_violation, no_qp), the counter must rise too.

package conform

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/cmd/internal/conform/rocepeer"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

const (
	secMcast       = "IBTA Vol 1 §10.5, §11.4.1.1, §11.4.2.1"
	secMcastDetach = "IBTA Vol 1 §10.5 (ibv_detach_mcast)"
	secMcastQKey   = "IBTA Vol 1 §10.5, §10.2.4 (class D: silently dropped)"
	secMcastDestQP = "IBTA Vol 1 §9.6.1.3.2 (a multicast packet's DestQP is 0xFFFFFF), §10.5"
)

// mcastGroup is the case's group: 239.77.x.y (IPv6: ff0e::77:x) from the
// tester's QPN, so that each case, and each run on a shared host, has a
// group of its own and no earlier case's member sees its datagrams.
func mcastGroup(r *Run) netip.Addr {
	q := r.TesterQPN
	if r.DUTAddr.Unmap().Is4() {
		return netip.AddrFrom4([4]byte{239, 77, byte(q >> 8), byte(q)})
	}
	return netip.AddrFrom16([16]byte{0: 0xff, 1: 0x0e, 13: 0x77, 14: byte(q >> 8), 15: byte(q)})
}

// groupMAC is the Ethernet address of IP multicast to group (RFC 1112
// §6.4: 01:00:5e and the low 23 bits; RFC 2464 §7: 33:33 and the low 32).
func groupMAC(group netip.Addr) [6]byte {
	if group.Is4() {
		a := group.As4()
		return [6]byte{0x01, 0x00, 0x5e, a[1] & 0x7f, a[2], a[3]}
	}
	a := group.As16()
	return [6]byte{0x33, 0x33, a[12], a[13], a[14], a[15]}
}

// needMcast: the DUT must offer multicast UD.
func needMcast(info agentproto.DeviceInfo) string {
	if !info.Multicast {
		return "multicast UD (max_mcast_grp 0, or an agent without it)"
	}
	return ""
}

// AttachGroup has the DUT attach its QP to the case's group.
type AttachGroup struct{}

func (AttachGroup) Do(r *Run) error {
	return r.Agent.AttachMcast(agentproto.Mcast{QP: r.QP.H, GID: mcastGroup(r).String()})
}

func (AttachGroup) String() string { return "DUT attaches its UD QP to the group" }

// DetachGroup has the DUT detach its QP from the case's group.
type DetachGroup struct{}

func (DetachGroup) Do(r *Run) error {
	return r.Agent.DetachMcast(agentproto.Mcast{QP: r.QP.H, GID: mcastGroup(r).String()})
}

func (DetachGroup) String() string { return "DUT detaches its UD QP from the group" }

// groupSender is the run's requester towards the group: DestQP 0xFFFFFF.
func groupSender(r *Run) *rocepeer.Requester {
	if q, ok := r.Vars["peer.group"].(*rocepeer.Requester); ok {
		return q
	}
	q := &rocepeer.Requester{DestQP: verbs.MulticastQPN, PSN: r.PSN(0), SrcQP: r.TesterQPN, QKey: r.Attrs.QKey}
	r.Vars["peer.group"] = q
	return q
}

// sendGroup sends p to the case's group (its IP and Ethernet address)
// and returns the IP header it carried.
func sendGroup(r *Run, p rocepeer.Packet) ([]byte, error) {
	group := mcastGroup(r)
	e := r.Port.Encap(r.DUTAddr)
	e.Dst, e.DstMAC = group, groupMAC(group)
	b := wire.AppendFrame(nil, &e, &p.H, p.Payload)
	var f wire.Frame
	if err := f.Decode(b, e.DstPort); err != nil {
		return nil, err
	}
	sent := slices.Clone(f.IP())
	no, err := r.Port.Send(b)
	if err != nil {
		return nil, err
	}
	r.Sent = no
	r.Note("#%d→%v to %v DestQP %#x", no, p.H.BTH.Opcode, group, p.H.BTH.DestQP)
	return sent, nil
}

// GroupSend sends a UD SEND Only of Len bytes (seed Seed) to the group
// with the QP's Q_Key XOR QKeyXOR and DestQP 0xFFFFFF, or the DUT QP's
// own QPN when ToQPN is set.
type GroupSend struct {
	Len     int
	Seed    byte
	QKeyXOR uint32
	ToQPN   bool
}

func (g GroupSend) Do(r *Run) error {
	p := groupSender(r).UDSend(r.Attrs.QKey^g.QKeyXOR, datagram(g.Len, g.Seed))
	if g.ToQPN {
		p.H.BTH.DestQP = r.QP.QPN
	}
	_, err := sendGroup(r, p)
	return err
}

func (g GroupSend) String() string {
	s := fmt.Sprintf("a %d-byte datagram to the group", g.Len)
	if g.QKeyXOR != 0 {
		s += " with another Q_Key"
	}
	if g.ToQPN {
		s += " with DestQP the QP's own QPN"
	}
	return s
}

// groupDelivered: the DUT's next completion is the receive of a datagram
// of n bytes (seed) from the tester's QP, with the GRH flag, and the
// buffer holds it after the GRH area.
func groupDelivered(n int, seed byte) Step {
	return Func{Name: "the datagram is received", F: func(r *Run) error {
		return checkGroupRecv(r, n, seed, nil)
	}}
}

// checkGroupRecv checks the receive of a group datagram and, when sent is
// the IP header the tester sent, the GRH area against it: over IPv4 20
// zero bytes and the header (Annex A17.4.5.1), over IPv6 the header with
// the group as its destination.
func checkGroupRecv(r *Run, n int, seed byte, sent []byte) error {
	wcs, err := r.Agent.PollCQ(r.CQ, 1, r.Bound(DefaultWithin))
	if err != nil {
		return err
	}
	if len(wcs) == 0 {
		return fmt.Errorf("no completion within %v: the datagram to the group was not delivered", r.Bound(DefaultWithin))
	}
	wc := wcs[0]
	r.Note("wc %s src_qp %#x", wc.StatusName, wc.SrcQP)
	if verbs.WCStatus(wc.Status) != verbs.WCSuccess || verbs.WCOpcode(wc.Opcode) != verbs.WCRecv ||
		wc.ByteLen != uint32(rocepeer.GRHLen+n) || wc.SrcQP != r.TesterQPN || verbs.WCFlags(wc.Flags)&verbs.WCFlagGRH == 0 {
		return fmt.Errorf("completion %s src_qp %#x, want SUCCESS RECV len %d src_qp %#x flags GRH",
			wcString(wc), wc.SrcQP, rocepeer.GRHLen+n, r.TesterQPN)
	}
	got, err := r.Agent.ReadMR(r.MR(DefaultMR).H, 0, rocepeer.GRHLen+n)
	if err != nil {
		return err
	}
	if !bytes.Equal(got[rocepeer.GRHLen:], datagram(n, seed)) {
		return fmt.Errorf("payload after the GRH area: %s", short(got[rocepeer.GRHLen:]))
	}
	if sent == nil {
		return nil
	}
	if len(sent) == 20 {
		return rocepeer.CheckGRHv4(got, sent)
	}
	if g := mcastGroup(r).As16(); !bytes.Equal(got[24:40], g[:]) {
		return fmt.Errorf("GRH destination % x, want the group %v", got[24:40], mcastGroup(r))
	}
	return nil
}

// unicastSend sends a datagram of n bytes to the DUT's QP itself.
func unicastSend(n int, seed byte) Step {
	return Func{Name: "a datagram to the QP itself (unicast)", F: func(r *Run) error {
		_, err := sendPeer(r, peerSender(r).UDSend(r.Attrs.QKey, datagram(n, seed)))
		return err
	}}
}

// mcastSetup: a UD QP at RTS with receives posted.
func mcastSetup(recvs int) Setup { return Setup{QPType: verbs.QPTypeUD, Recvs: recvs} }

const mcastWrongQKey = 0x00FF00FF

func mcastCases() []Case {
	return []Case{mcastDeliver(), mcastDetached(), mcastQKey(), mcastDestQP()}
}

func init() { Register(mcastCases()...) }

func mcastDeliver() Case {
	return Case{
		ID: "10.5/mcast-deliver", Section: secMcast, Transport: RoCE, Needs: needMcast,
		Title: "multicast UD: a datagram to the group (DestQP 0xFFFFFF) reaches the attached QP with the GRH and the sender's QPN",
		Setup: mcastSetup(1),
		Steps: []Step{
			AttachGroup{},
			Func{Name: "a datagram to the group; the completion, payload and GRH area", F: func(r *Run) error {
				sent, err := sendGroup(r, groupSender(r).UDSend(r.Attrs.QKey, datagram(72, 3)))
				if err != nil {
					return err
				}
				return checkGroupRecv(r, 72, 3, sent)
			}},
		},
		Break: &Break{Name: "ignores datagrams to its groups", In: inGroup(func(*wire.Frame) bool { return false })},
	}
}

func mcastDetached() Case {
	return Case{
		ID: "10.5/mcast-detached", Section: secMcastDetach, Transport: RoCE, Needs: needMcast,
		Title: "multicast UD: once the QP detached, a datagram to the group is not delivered; the QP stays RTS and takes unicast",
		Setup: mcastSetup(3),
		Steps: []Step{
			AttachGroup{},
			GroupSend{Len: 40, Seed: 1},
			groupDelivered(40, 1),
			unicastSend(24, 2),
			groupDelivered(24, 2),
			DetachGroup{},
			GroupSend{Len: 40, Seed: 5},
			PollNone{For: 150 * time.Millisecond},
			QPState(verbs.QPSRTS),
		},
		Break: &Break{Name: "detach does not stop delivery", Apply: detachIgnored},
	}
}

func mcastQKey() Case {
	return Case{
		ID: "10.2.4/mcast-qkey", Section: secMcastQKey, Transport: RoCE, Needs: needMcast,
		Title: "multicast UD: a datagram to the group with another Q_Key is dropped (and counted); the next with the QP's is delivered",
		Setup: mcastSetup(1),
		Steps: groupDropped("qkey_violation", GroupSend{Len: 32, Seed: 1, QKeyXOR: mcastWrongQKey}),
		Break: &Break{Name: "does not check the Q_Key of a group's datagrams", In: inGroup(func(f *wire.Frame) bool {
			d := f.Packet.DETH()
			v := d.Fields()
			v.QKey ^= mcastWrongQKey
			d.Encode(&v)
			return true
		})},
	}
}

func mcastDestQP() Case {
	return Case{
		ID: "9.6.1.3.2/mcast-destqp", Section: secMcastDestQP, Transport: RoCE, Needs: needMcast,
		Title: "multicast UD: a datagram to the group naming the attached QP's own QPN, not 0xFFFFFF, is dropped; the next is delivered",
		Setup: mcastSetup(1),
		Steps: groupDropped("no_qp", GroupSend{Len: 32, Seed: 1, ToQPN: true}),
		Break: &Break{Name: "takes any DestQP of a group's datagram for the multicast QPN", In: inGroup(func(f *wire.Frame) bool {
			bth := f.Packet.BTH()
			v := bth.Fields()
			v.DestQP = verbs.MulticastQPN
			bth.Encode(&v)
			return true
		})},
	}
}

// groupDropped: with the QP attached, bad (a datagram to the group the
// DUT must drop) is not delivered and counted in counter; the next, a good
// one, is delivered.
func groupDropped(counter string, bad GroupSend) []Step {
	good := GroupSend{Len: bad.Len, Seed: bad.Seed + 1}
	return []Step{
		AttachGroup{},
		SnapCounter{Name: counter},
		bad,
		PollNone{For: 150 * time.Millisecond},
		CounterRose{Name: counter},
		good,
		groupDelivered(good.Len, good.Seed),
	}
}

// inGroup is a fault on the UD datagrams to a multicast address the DUT
// receives: edit rewrites one (then re-sealed) and returns true, or
// returns false to drop it.
func inGroup(edit func(f *wire.Frame) bool) FrameFault {
	return func(b []byte) []byte {
		var f wire.Frame
		if f.Decode(b, 0) != nil || !f.DstAddr().IsMulticast() || f.Packet.Info().Transport != wire.TransportUD {
			return b
		}
		if !edit(&f) {
			return nil
		}
		f.Seal()
		return b
	}
}

// detachIgnored is the Break of mcast-detached: a DUT whose detach does
// not take effect. Its link stays in the group (the kernel keeps
// delivering the group's datagrams), and a datagram to a group the device
// no longer has members in attaches again the QP the tester's unicast
// datagram named, so the datagram reaches it.
func detachIgnored(d *SelfDUT) (restore func()) {
	dev := nic.DeviceOf(d.Device)
	if dev == nil {
		return nil
	}
	var qpn atomic.Uint32
	d.Link.StayInGroups(true)
	d.Link.Set(nil, func(b []byte) []byte {
		var f wire.Frame
		if f.Decode(b, 0) != nil || f.Packet.Info().Transport != wire.TransportUD {
			return b
		}
		dst := f.DstAddr()
		if !dst.IsMulticast() {
			qpn.Store(f.Packet.BTH().DestQP())
			return b
		}
		gid := verbs.GIDFromAddr(dst)
		if q := dev.QP(qpn.Load()); q != nil && dev.McastGroups()[gid] == 0 {
			_ = q.AttachMcast(gid, 0) // a failure leaves the datagram undelivered: the case then passes and the self-test says so
		}
		return b
	})
	return func() { d.Link.StayInGroups(false) }
}
