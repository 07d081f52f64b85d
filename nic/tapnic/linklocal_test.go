package tapnic_test

import (
	"bytes"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/tap/taptest"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/tsharktest"
)

// TestLinkLocalGID: a TAP-mode NIC's GID table is Linux's (index 0 the
// link-local GID of its MAC, then its addresses, so -g 1 is the IPv4
// address as on rxe), and index 0 works on the wire: the namespace's
// kernel pings the link-local address (the NIC answers ND for it), and an
// RC QP pair whose GIDs are both link-local moves data, the capture
// showing RoCEv2 between the two fe80:: addresses.
func TestLinkLocalGID(t *testing.T) {
	tn := taptest.New(t, 66)
	path := filepath.Join(t.TempDir(), "a.pcap")
	pw, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	a := openNIC(t, tn, "rnica", pw, tn.Addr4(2), tn.Addr6(2))
	b := openNIC(t, tn, "rnicb", nil, tn.Addr4(3))
	llA, llB := nic.LinkLocalGID(a.MAC), nic.LinkLocalGID(b.MAC)
	for _, c := range []struct {
		n    *nic.Device
		want []netip.Addr
	}{
		{a.Device, []netip.Addr{llA, verbs.GIDFromAddr(tn.Addr4(2).Addr()), tn.Addr6(2).Addr()}},
		{b.Device, []netip.Addr{llB, verbs.GIDFromAddr(tn.Addr4(3).Addr())}},
	} {
		for i, w := range c.want {
			if g, err := c.n.QueryGID(1, i); err != nil || g != w {
				t.Errorf("%s GID %d: %v %v, want %v", c.n.Name(), i, g, err, w)
			}
		}
		if _, err := c.n.QueryGID(1, len(c.want)); err == nil {
			t.Errorf("%s has more than %d GIDs", c.n.Name(), len(c.want))
		}
	}
	if !llA.IsLinkLocalUnicast() {
		t.Fatalf("GID 0 %v is not link-local", llA)
	}
	if out, ok := tn.Ping(llA.WithZone(tn.Bridge), 5*time.Second); !ok {
		t.Errorf("ping %v%%%s: %s", llA, tn.Bridge, out)
	}

	x, y := newEnd(t, a), newEnd(t, b)
	// Both QPs on GID index 0, the link-local one, as -g 0 on rxe.
	connectAV(t, x, y, verbs.AddressVector{DGID: llB, SGIDIndex: 0, HopLimit: 255, PortNum: 1}, 14, 7)
	connectAV(t, y, x, verbs.AddressVector{DGID: llA, SGIDIndex: 0, HopLimit: 255, PortNum: 1}, 14, 7)
	for i := range x.buf[:8192] {
		x.buf[i] = byte(i * 7)
	}
	if wc := post(t, x, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: sge(x, 0, 8192),
		RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey()}, 5*time.Second); wc.Status != verbs.WCSuccess {
		t.Fatalf("WRITE over link-local GIDs: %v", wc.Status)
	}
	if !bytes.Equal(x.buf[:8192], y.buf[:8192]) {
		t.Fatal("WRITE: data differs")
	}
	a.Close()
	b.Close()
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	// rnic's decoder checks every ICRC (computed over the link-local
	// addresses); one tshark run finds the frames between them.
	var out strings.Builder
	if res, err := decode.Run(&out, []string{path}, decode.Options{}); err != nil || res.ICRCBad != 0 || res.RoCE == 0 {
		t.Errorf("decode: %+v %v\n%s", res, err, out.String())
	}
	rows := tsharktest.Fields(t, path, tsharktest.Options{
		Filter: "udp.dstport == 4791 && ipv6.src == " + llA.String() + " && ipv6.dst == " + llB.String()}, "ipv6.src")
	if len(rows) < 8 {
		t.Errorf("%d RoCEv2 frames from %v to %v in the capture, want the WRITE's 8 at least", len(rows), llA, llB)
	}
}
