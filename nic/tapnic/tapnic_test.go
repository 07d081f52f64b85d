package tapnic_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce"
	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/tap/taptest"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/tsharktest"
)

func TestConfigErrors(t *testing.T) {
	p := netip.MustParsePrefix("10.9.0.2/24")
	for _, c := range []tapnic.Config{
		{Prefixes: []netip.Prefix{p}},
		{TAP: "t0"},
		{TAP: "t0", Prefixes: []netip.Prefix{p}, MTU: 9001},
		{TAP: "t0", Prefixes: []netip.Prefix{p}, MTU: 100},
		{TAP: "t0", Prefixes: []netip.Prefix{netip.MustParsePrefix("10.9.0.2/32")}},
		{TAP: "t0", Prefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/8")}},
		{TAP: "t0", Prefixes: []netip.Prefix{netip.MustParsePrefix("224.0.0.1/24")}},
		{TAP: "t0", Prefixes: []netip.Prefix{p, p}},
	} {
		if n, err := tapnic.Open(c); err == nil {
			n.Close()
			t.Errorf("Open(%+v) succeeded", c)
		}
	}
}

// A NIC owns its TAP: it answers ping (IPv4 and IPv6) from the namespace,
// and the TAP it created is gone when it closes.
func TestOpenPingClose(t *testing.T) {
	tn := taptest.New(t, 61)
	n, err := tapnic.Open(tapnic.Config{TAP: "t-ping", Netns: tn.Name, Bridge: tn.Bridge,
		Prefixes: []netip.Prefix{tn.Addr4(2), tn.Addr6(2)}})
	if err != nil {
		t.Fatal(err)
	}
	if out := tn.IP(t, "-d", "link", "show", "t-ping"); !strings.Contains(out, "tun") || !strings.Contains(out, "master "+tn.Bridge) {
		t.Errorf("TAP not on the bridge: %s", out)
	}
	for _, a := range []netip.Addr{tn.Addr4(2).Addr(), tn.Addr6(2).Addr()} {
		if out, ok := tn.Ping(a, 5*time.Second); !ok {
			t.Errorf("ping %v: %s", a, out)
		}
	}
	// The namespace learned the NIC's MAC from its ARP/ND answers.
	mac := n.MAC
	if out := tn.IP(t, "neigh", "show", "dev", tn.Bridge); !strings.Contains(out, strings.ToLower(macString(mac))) {
		t.Errorf("neighbour table lacks %s: %s", macString(mac), out)
	}
	c := n.Host().Counters()
	if c.ICMPEchoRx == 0 || c.ICMPEchoTx == 0 {
		t.Errorf("echo counters %+v", c)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("ip", "-n", tn.Name, "link", "show", "t-ping").Run(); err == nil {
		t.Error("the TAP the NIC created outlived it")
	}
}

func macString(m [6]byte) string {
	var b strings.Builder
	for i, x := range m {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strings.ToLower(string("0123456789abcdef"[x>>4]) + string("0123456789abcdef"[x&15])))
	}
	return b.String()
}

// Two NICs on one bridge: an RC QP pair over IPv4 runs WRITE, READ, SEND
// with immediate and both atomics; the capture of NIC A's TAP holds ARP,
// RoCEv2 with good ICRCs, and passes tshark.
func TestRCAcrossTAPs(t *testing.T) {
	testRC(t, 62, false)
}

// The same with NIC B on IPv6 only: the QPs use IPv6 GIDs, ND resolves.
func TestRCAcrossTAPsIPv6Only(t *testing.T) {
	testRC(t, 63, true)
}

func testRC(t *testing.T, subnet int, v6 bool) {
	tn := taptest.New(t, subnet)
	path := filepath.Join(t.TempDir(), "a.pcap")
	pw, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	a := openNIC(t, tn, "rnica", pw, tn.Addr4(2), tn.Addr6(2))
	bPrefixes := []netip.Prefix{tn.Addr4(3)}
	aAddr, bAddr := tn.Addr4(2).Addr(), tn.Addr4(3).Addr()
	if v6 {
		bPrefixes = []netip.Prefix{tn.Addr6(3)}
		aAddr, bAddr = tn.Addr6(2).Addr(), tn.Addr6(3).Addr()
	}
	b := openNIC(t, tn, "rnicb", nil, bPrefixes...)
	x, y := pair(t, a, b, aAddr, bAddr, 14, 7)

	rng := rand.New(rand.NewPCG(uint64(subnet), 1))
	for i := range x.buf[:32<<10] {
		x.buf[i] = byte(rng.Uint32())
	}
	// WRITE 32 KiB (32 packets at path MTU 1024).
	if wc := post(t, x, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: sge(x, 0, 32<<10),
		RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey()}, 5*time.Second); wc.Status != verbs.WCSuccess {
		t.Fatalf("WRITE: %v", wc.Status)
	}
	if !bytes.Equal(x.buf[:32<<10], y.buf[:32<<10]) {
		t.Fatal("WRITE: data differs")
	}
	// READ it back into the second half of x.
	if wc := post(t, x, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, SGL: sge(x, 32<<10, 32<<10),
		RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey()}, 5*time.Second); wc.Status != verbs.WCSuccess {
		t.Fatalf("READ: %v", wc.Status)
	}
	if !bytes.Equal(x.buf[:32<<10], x.buf[32<<10:64<<10]) {
		t.Fatal("READ: data differs")
	}
	// SEND with immediate into a posted receive.
	if err := y.qp.PostRecv(&verbs.RecvWR{ID: 9, SGL: sge(y, 0, 4096)}); err != nil {
		t.Fatal(err)
	}
	if wc := post(t, x, verbs.SendWR{ID: 3, Opcode: verbs.WRSendWithImm, Imm: 0x1234, SGL: sge(x, 100, 3000)},
		5*time.Second); wc.Status != verbs.WCSuccess {
		t.Fatalf("SEND: %v", wc.Status)
	}
	if wc := poll(t, y, 5*time.Second); wc.Status != verbs.WCSuccess || wc.ByteLen != 3000 || wc.Imm != 0x1234 {
		t.Fatalf("receive: %+v", wc)
	}
	if !bytes.Equal(y.buf[:3000], x.buf[100:3100]) {
		t.Fatal("SEND: data differs")
	}
	// FetchAdd then CmpSwap on an 8-byte word of y.
	binary.LittleEndian.PutUint64(y.buf[8192:], 40)
	if wc := post(t, x, verbs.SendWR{ID: 4, Opcode: verbs.WRAtomicFetchAdd, SGL: sge(x, 0, 8), CompareAdd: 2,
		RemoteAddr: y.mr.Addr() + 8192, RKey: y.mr.RKey()}, 5*time.Second); wc.Status != verbs.WCSuccess {
		t.Fatalf("FetchAdd: %v", wc.Status)
	}
	if got := binary.LittleEndian.Uint64(x.buf); got != 40 {
		t.Errorf("FetchAdd returned %d, want 40", got)
	}
	if wc := post(t, x, verbs.SendWR{ID: 5, Opcode: verbs.WRAtomicCmpSwp, SGL: sge(x, 0, 8), CompareAdd: 42, Swap: 7,
		RemoteAddr: y.mr.Addr() + 8192, RKey: y.mr.RKey()}, 5*time.Second); wc.Status != verbs.WCSuccess {
		t.Fatalf("CmpSwap: %v", wc.Status)
	}
	if got := binary.LittleEndian.Uint64(y.buf[8192:]); got != 7 {
		t.Errorf("after CmpSwap the word is %d, want 7", got)
	}

	a.Close()
	b.Close()
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res, err := decode.Run(&out, []string{path}, decode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ICRCBad != 0 || res.RoCE < 40 {
		t.Errorf("decode: %+v\n%s", res, out.String())
	}
	tsharktest.Check(t, path, tsharktest.Options{})
	resolve := "arp.opcode"
	if v6 {
		resolve = "icmpv6.type"
	}
	if rows := tsharktest.Fields(t, path, tsharktest.Options{}, resolve); len(rows) == 0 {
		t.Errorf("no %s in the capture: the NIC did not resolve its peer", resolve)
	}
}

// A peer that vanishes: the requester retries retry_cnt times and completes
// with RETRY_EXC_ERR; the NIC keeps serving its other QPs.
func TestVanishingPeer(t *testing.T) {
	tn := taptest.New(t, 64)
	a := openNIC(t, tn, "rnica", nil, tn.Addr4(2))
	b := openNIC(t, tn, "rnicb", nil, tn.Addr4(3))
	c := openNIC(t, tn, "rnicc", nil, tn.Addr4(4))
	// timeout 10: 4.096 µs × 2^10 ≈ 4 ms per try; 3 retries.
	xb, _ := pair(t, a, b, tn.Addr4(2).Addr(), tn.Addr4(3).Addr(), 10, 3)
	xc, yc := pair(t, a, c, tn.Addr4(2).Addr(), tn.Addr4(4).Addr(), 10, 3)
	write := func(e, peer *end, id uint64) verbs.WC {
		return post(t, e, verbs.SendWR{ID: id, Opcode: verbs.WRRDMAWrite, SGL: sge(e, 0, 2048),
			RemoteAddr: peer.mr.Addr(), RKey: peer.mr.RKey()}, 10*time.Second)
	}
	if wc := write(xc, yc, 1); wc.Status != verbs.WCSuccess {
		t.Fatalf("A->C before: %v", wc.Status)
	}
	before := a.Stack.Counters().Get(roce.RetryExceededErr)
	b.Close() // B and its TAP vanish
	wc := post(t, xb, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, SGL: sge(xb, 0, 2048),
		RemoteAddr: 0x1000, RKey: 1}, 10*time.Second)
	if wc.Status != verbs.WCRetryExcErr {
		t.Fatalf("A->vanished B: %v, want RETRY_EXC_ERR", wc.Status)
	}
	if got := a.Stack.Counters().Get(roce.RetryExceededErr) - before; got != 1 {
		t.Errorf("retry_exceeded went up by %d, want 1", got)
	}
	if xb.qp.State() != verbs.QPSErr {
		t.Errorf("QP toward B is %v, want ERR", xb.qp.State())
	}
	for i := range 5 {
		if wc := write(xc, yc, uint64(10+i)); wc.Status != verbs.WCSuccess {
			t.Fatalf("A->C after: %v", wc.Status)
		}
	}
}

// Two QPs on one TAP-mode NIC, connected to each other over the NIC's own
// GID (as two rnicd clients of one NIC are): the frames turn around inside
// the NIC, over IPv4 and IPv6, and none reaches the TAP.
func TestLoopbackQPs(t *testing.T) {
	tn := taptest.New(t, 64)
	n := openNIC(t, tn, "rnicl", nil, tn.Addr4(2), tn.Addr6(2))
	for _, addr := range []netip.Addr{tn.Addr4(2).Addr(), tn.Addr6(2).Addr()} {
		x, y := pair(t, n, n, addr, addr, 14, 7)
		for i := range x.buf[:48<<10] {
			x.buf[i] = byte(i * 7)
		}
		if wc := post(t, x, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: sge(x, 0, 48<<10),
			RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey()}, 5*time.Second); wc.Status != verbs.WCSuccess {
			t.Fatalf("%v: WRITE: %v", addr, wc.Status)
		}
		if !bytes.Equal(x.buf[:48<<10], y.buf[:48<<10]) {
			t.Fatalf("%v: WRITE: data differs", addr)
		}
		if wc := post(t, y, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, SGL: sge(y, 48<<10, 16<<10),
			RemoteAddr: x.mr.Addr(), RKey: x.mr.RKey()}, 5*time.Second); wc.Status != verbs.WCSuccess {
			t.Fatalf("%v: READ: %v", addr, wc.Status)
		}
		if !bytes.Equal(y.buf[48<<10:], x.buf[:16<<10]) {
			t.Fatalf("%v: READ: data differs", addr)
		}
	}
	c := n.Host().Counters()
	if c.LoopbackFrames < 2*(48+16) || c.RoCETx < c.LoopbackFrames {
		t.Errorf("loopback_frames %d roce_tx %d: the transfers did not loop inside the NIC", c.LoopbackFrames, c.RoCETx)
	}
	if c.TxFrames > 40 { // announcements and ND/MLD only
		t.Errorf("%d frames went out on the TAP", c.TxFrames)
	}
}
