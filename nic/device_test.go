package nic

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

func TestActiveMTU(t *testing.T) {
	for _, c := range []struct {
		link int
		want verbs.MTU
	}{
		{1500, verbs.MTU1024}, // rxe: 1500 − 80 = 1420 → 1024
		{9000, verbs.MTU4096},
		{4176, verbs.MTU4096},
		{4175, verbs.MTU2048},
		{2128, verbs.MTU2048},
		{1280, verbs.MTU1024},
		{1100, verbs.MTU512},
		{576, verbs.MTU256},
		{336, verbs.MTU256},
		{335, 0},
	} {
		if got := activeMTU(c.link); got != c.want {
			t.Errorf("activeMTU(%d) = %d, want %d", c.link, got, c.want)
		}
	}
}

func TestOpenMTU(t *testing.T) {
	for _, c := range []struct {
		mtu  int
		want verbs.MTU
	}{{0, verbs.MTU1024}, {1500, verbs.MTU1024}, {9000, verbs.MTU4096}} {
		d, err := Open(Config{MTU: c.mtu})
		if err != nil {
			t.Fatalf("Open(MTU %d): %v", c.mtu, err)
		}
		pa, err := d.QueryPort(1)
		wantIs(t, "QueryPort", err, nil)
		if pa.ActiveMTU != c.want || pa.MaxMTU != verbs.MTU4096 {
			t.Errorf("MTU %d: active %d max %d, want %d and 5", c.mtu, pa.ActiveMTU, pa.MaxMTU, c.want)
		}
	}
	_, err := Open(Config{MTU: 300})
	wantIs(t, "Open(MTU 300)", err, verbs.ErrInvalid)
}

func TestQueryPort(t *testing.T) {
	f := newFixture(t)
	pa, err := f.d.QueryPort(1)
	wantIs(t, "QueryPort(1)", err, nil)
	want := verbs.PortAttr{
		State: verbs.PortActive, MaxMTU: verbs.MTU4096, ActiveMTU: verbs.MTU1024, GIDTblLen: 2,
		MaxMsgSize: 1 << 31, PKeyTblLen: 1, PhysState: verbs.PhysStateLinkUp, LinkLayer: verbs.LinkLayerEthernet, LinkMTU: 1500,
	}
	if pa != want {
		t.Errorf("QueryPort = %+v\nwant %+v", pa, want)
	}
	_, err = f.d.QueryPort(2)
	wantIs(t, "QueryPort(2)", err, verbs.ErrInvalid)
	_, err = f.d.QueryPort(0)
	wantIs(t, "QueryPort(0)", err, verbs.ErrInvalid)
	pk, err := f.d.QueryPKey(1, 0)
	if err != nil || pk != 0xFFFF {
		t.Errorf("QueryPKey(1, 0) = %#x, %v", pk, err)
	}
	_, err = f.d.QueryPKey(1, 1)
	wantIs(t, "QueryPKey(1, 1)", err, verbs.ErrInvalid)
}

func TestGIDTable(t *testing.T) {
	d, err := Open(Config{
		MAC:  testMAC,
		GIDs: []netip.Addr{netip.MustParseAddr("192.168.1.7"), netip.MustParseAddr("2001:db8::5"), netip.MustParseAddr("fe80::1%eth0")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"::ffff:192.168.1.7", "2001:db8::5", "fe80::1"}
	for i, w := range want {
		g, err := d.QueryGID(1, i)
		if err != nil || g != netip.MustParseAddr(w) {
			t.Errorf("QueryGID(1, %d) = %v, %v; want %s", i, g, err, w)
		}
	}
	if !d.gids[0].Is4In6() {
		t.Errorf("IPv4 GID %v is not IPv4-mapped", d.gids[0])
	}
	_, err = d.QueryGID(1, 3)
	wantIs(t, "QueryGID(1, 3)", err, verbs.ErrInvalid)
	_, err = d.QueryGID(1, -1)
	wantIs(t, "QueryGID(1, -1)", err, verbs.ErrInvalid)
	_, err = d.QueryGID(2, 0)
	wantIs(t, "QueryGID(2, 0)", err, verbs.ErrInvalid)
	if pa, _ := d.QueryPort(1); pa.GIDTblLen != 3 {
		t.Errorf("gid_tbl_len %d, want 3", pa.GIDTblLen)
	}

	// Linux's layout: the link-local GID first, then the addresses.
	d, err = Open(Config{MAC: [6]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}, LinkLocal: true,
		GIDs: []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("fe80::211:22ff:fe33:4455")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.GIDs(), []netip.Addr{netip.MustParseAddr("fe80::211:22ff:fe33:4455"),
		netip.MustParseAddr("::ffff:10.0.0.1")}; !slices.Equal(got, want) {
		t.Errorf("GIDs with the link-local one: %v, want %v", got, want)
	}
	if _, err := d.QueryGID(1, 2); err == nil || !strings.Contains(err.Error(), "0 is the link-local GID") {
		t.Errorf("QueryGID(1, 2): %v, want an error saying what index 0 is", err)
	}

	// No addresses: the link-local EUI-64 GID, as Linux's default GID.
	d, err = Open(Config{MAC: [6]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}})
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := d.QueryGID(1, 0); g != netip.MustParseAddr("fe80::211:22ff:fe33:4455") {
		t.Errorf("default GID %v", g)
	}

	for _, bad := range [][]netip.Addr{
		{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("::ffff:10.0.0.1")}, // duplicate
		{netip.MustParseAddr("0.0.0.0")},
		{netip.MustParseAddr("::")},
		{netip.MustParseAddr("224.0.0.1")},
		{netip.MustParseAddr("ff02::1")},
		{{}},
	} {
		_, err := Open(Config{GIDs: bad})
		wantIs(t, "Open(GIDs "+netip.Addr{}.String()+")", err, verbs.ErrInvalid)
	}
	tooMany := make([]netip.Addr, 257)
	for i := range tooMany {
		tooMany[i] = netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})
	}
	_, err = Open(Config{GIDs: tooMany})
	wantIs(t, "Open(257 GIDs)", err, verbs.ErrInvalid)
}

func TestQueryDefaults(t *testing.T) {
	f := newFixture(t)
	a := f.d.Query()
	l := DefaultLimits()
	if a.MaxQP != l.MaxQP || a.MaxQPWR != 1<<20 || a.MaxSGE != 32 || a.MaxSGERd != 32 || a.MaxCQ != 1<<20 ||
		a.MaxCQE != 32767 || a.MaxPD != 1<<20 || a.MaxQPRdAtom != 128 || a.MaxQPInitRdAtom != 128 ||
		a.MaxResRdAtom != 0x3f000 || a.MaxSRQ != 1<<20 || a.MaxSRQWR != 1<<20 || a.MaxSRQSGE != 27 ||
		a.MaxInlineData != 512 || a.MaxAH != 1<<20 {
		t.Errorf("limits differ from rxe's: %+v", a)
	}
	mc := f.d.Memory().Config()
	if a.MaxMW != mc.MaxWindows {
		t.Errorf("max_mw %d, memory table enforces %d", a.MaxMW, mc.MaxWindows)
	}
	if a.MaxMR != mc.MaxRegions || a.MaxMRSize != mc.MaxRegionSize {
		t.Errorf("max_mr %d / max_mr_size %d, memory table enforces %d / %d", a.MaxMR, a.MaxMRSize, mc.MaxRegions, mc.MaxRegionSize)
	}
	if a.MaxMsgSize != 1<<31 || a.VendorID != 0xFFFFFF || a.VendorPartID != VendorPartID || a.FwVer == "" ||
		a.PhysPortCnt != 1 || a.MaxPKeys != 64 || a.MaxMW != 524287 || a.PageSizeCap != 0xFFFFF000 {
		t.Errorf("identification: %+v", a)
	}
	// EUI-64 of 02:00:5e:10:20:30: U/L bit flipped, ff:fe inserted.
	if a.NodeGUID != 0x00005efffe102030 || a.SysImageGUID != a.NodeGUID {
		t.Errorf("node GUID %#x, sys image GUID %#x", a.NodeGUID, a.SysImageGUID)
	}
	if a.AtomicCap != verbs.AtomicGlob {
		t.Errorf("atomic_cap %v", a.AtomicCap)
	}
	if a.DeviceCapFlags != defaultCaps || a.DeviceCapFlags&verbs.DeviceSRQResize == 0 {
		t.Errorf("cap flags %#x", a.DeviceCapFlags)
	}

	d, err := Open(Config{Limits: Limits{NoAtomics: true, MaxSGE: 6, MaxSGERd: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Query(); a.AtomicCap != verbs.AtomicNone || a.MaxSGE != 6 || a.MaxSGERd != 1 {
		t.Errorf("overrides: %+v", a)
	}
}

func TestBadLimits(t *testing.T) {
	for name, l := range map[string]Limits{
		"negative":        {MaxQP: -1},
		"sge_rd > sge":    {MaxSGE: 4, MaxSGERd: 5},
		"rd_atom > 255":   {MaxQPRdAtom: 256},
		"too many QPs":    {MaxQP: 1 << 24},
		"too many MRs":    {MaxMR: memory.MaxKeyIndex},
		"negative inline": {MaxInlineData: -5},
	} {
		if _, err := Open(Config{Limits: l}); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
}

// TestLimitsEnforced checks that every count Query reports is enforced:
// the limit-th object is created, the next one fails with verbs.ErrNoMemory.
func TestLimitsEnforced(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Limits = Limits{MaxPD: 2, MaxCQ: 2, MaxQP: 2, MaxAH: 2, MaxSRQ: 2, MaxMR: 2}
	})
	a := f.d.Query()
	if a.MaxPD != 2 || a.MaxCQ != 2 || a.MaxQP != 2 || a.MaxAH != 2 || a.MaxSRQ != 2 || a.MaxMR != 2 {
		t.Fatalf("Query does not report the overrides: %+v", a)
	}
	// The fixture holds one PD and one CQ.
	_, err := f.d.AllocPD()
	wantIs(t, "PD 2", err, nil)
	_, err = f.d.AllocPD()
	wantIs(t, "PD 3", err, verbs.ErrNoMemory)
	_, err = f.d.CreateCQ(1)
	wantIs(t, "CQ 2", err, nil)
	_, err = f.d.CreateCQ(1)
	wantIs(t, "CQ 3", err, verbs.ErrNoMemory)
	f.qp(verbs.QPTypeRC)
	f.qp(verbs.QPTypeUD)
	_, err = f.d.CreateQP(f.pd, QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq})
	wantIs(t, "QP 3", err, verbs.ErrNoMemory)
	for i := range 2 {
		_, err = f.d.CreateAH(f.pd, goodAV())
		wantIs(t, "AH", err, nil)
		_, err = f.d.CreateSRQ(f.pd, 1, 1)
		wantIs(t, "SRQ", err, nil)
		_, err = f.d.RegMR(f.pd, make([]byte, 8), 0)
		wantIs(t, "MR", err, nil)
		_ = i
	}
	_, err = f.d.CreateAH(f.pd, goodAV())
	wantIs(t, "AH 3", err, verbs.ErrNoMemory)
	_, err = f.d.CreateSRQ(f.pd, 1, 1)
	wantIs(t, "SRQ 3", err, verbs.ErrNoMemory)
	_, err = f.d.RegMR(f.pd, make([]byte, 8), 0)
	wantIs(t, "MR 3", err, verbs.ErrNoMemory)
}

func TestSizeLimitsEnforced(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Limits = Limits{MaxCQE: 16, MaxQPWR: 16, MaxSGE: 4, MaxInlineData: 32, MaxSRQWR: 16, MaxSRQSGE: 3, MaxMRSize: 64}
	})
	_, err := f.d.CreateCQ(16)
	wantIs(t, "CQ 16", err, nil)
	_, err = f.d.CreateCQ(17)
	wantIs(t, "CQ 17", err, verbs.ErrInvalid)
	_, err = f.d.CreateCQ(0)
	wantIs(t, "CQ 0", err, verbs.ErrInvalid)

	ok := verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 32}
	_, err = f.d.CreateQP(f.pd, QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq, Cap: ok})
	wantIs(t, "QP at limits", err, nil)
	for name, mod := range map[string]func(*verbs.QPCap){
		"max_send_wr":     func(c *verbs.QPCap) { c.MaxSendWR++ },
		"max_recv_wr":     func(c *verbs.QPCap) { c.MaxRecvWR++ },
		"max_send_sge":    func(c *verbs.QPCap) { c.MaxSendSGE++ },
		"max_recv_sge":    func(c *verbs.QPCap) { c.MaxRecvSGE++ },
		"max_inline_data": func(c *verbs.QPCap) { c.MaxInlineData++ },
	} {
		c := ok
		mod(&c)
		_, err = f.d.CreateQP(f.pd, QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq, Cap: c})
		wantIs(t, name+" over the limit", err, verbs.ErrInvalid)
	}

	_, err = f.d.CreateSRQ(f.pd, 16, 3)
	wantIs(t, "SRQ at limits", err, nil)
	_, err = f.d.CreateSRQ(f.pd, 17, 3)
	wantIs(t, "SRQ max_wr", err, verbs.ErrInvalid)
	_, err = f.d.CreateSRQ(f.pd, 16, 4)
	wantIs(t, "SRQ max_sge", err, verbs.ErrInvalid)
	_, err = f.d.CreateSRQ(f.pd, 0, 1)
	wantIs(t, "SRQ 0 WRs", err, verbs.ErrInvalid)

	_, err = f.d.RegMR(f.pd, make([]byte, 64), 0)
	wantIs(t, "MR at max_mr_size", err, nil)
	_, err = f.d.RegMR(f.pd, make([]byte, 65), 0)
	wantIs(t, "MR above max_mr_size", err, verbs.ErrInvalid)
	if f.d.Query().MaxMRSize != 64 {
		t.Error("max_mr_size not reported")
	}
}

func TestProvider(t *testing.T) {
	d, err := Open(Config{GIDs: localAll})
	if err != nil {
		t.Fatal(err)
	}
	pd, _ := d.AllocPD()
	cq, _ := d.CreateCQ(4)
	_, err = d.CreateQP(pd, QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq})
	wantIs(t, "CreateQP without provider", err, verbs.ErrNoProvider)
	wantIs(t, "SetProvider(nil)", d.SetProvider(nil), verbs.ErrInvalid)
	p := &fakeProvider{}
	wantIs(t, "SetProvider", d.SetProvider(p), nil)
	wantIs(t, "SetProvider twice", d.SetProvider(p), verbs.ErrBusy)
	q, err := d.CreateQP(pd, QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq})
	wantIs(t, "CreateQP", err, nil)
	e := p.engines[q.QPN()]
	if e == nil {
		t.Fatal("provider not asked")
	}
	cfg := e.cfg
	if cfg.QPN != q.QPN() || cfg.PD != pd.ID() || cfg.Memory != d.Memory() || cfg.SendCQ != cq ||
		cfg.RQ == nil || cfg.UsesSRQ || cfg.PortMTU != verbs.MTU1024 || cfg.Event == nil {
		t.Errorf("QPConfig %+v", cfg)
	}

	// A provider failure releases everything.
	p.err = verbs.ErrNotSupported
	_, err = d.CreateQP(pd, QPInit{Type: verbs.QPTypeUD, SendCQ: cq, RecvCQ: cq})
	wantIs(t, "CreateQP with failing provider", err, verbs.ErrNotSupported)
	wantIs(t, "destroy QP", q.Destroy(), nil)
	wantIs(t, "destroy CQ after failed create", cq.Destroy(), nil)
	wantIs(t, "dealloc PD after failed create", d.DeallocPD(pd), nil)
	if len(d.qps) != 0 {
		t.Errorf("QPN table not empty: %v", d.qps)
	}
}

func TestClose(t *testing.T) {
	f := newFixture(t)
	wantIs(t, "Close", f.d.Close(), nil)
	wantIs(t, "Close twice", f.d.Close(), verbs.ErrClosed)
	if _, ok := <-f.d.Events(); ok {
		t.Error("event channel not closed")
	}
	_, err := f.d.AllocPD()
	wantIs(t, "AllocPD after Close", err, verbs.ErrClosed)
	_, err = f.d.CreateQP(f.pd, QPInit{Type: verbs.QPTypeRC, SendCQ: f.cq, RecvCQ: f.cq})
	wantIs(t, "CreateQP after Close", err, verbs.ErrClosed)
	// Raising after close must not panic.
	f.d.events.raise(Event{Type: verbs.EventCQErr})
}

func TestEventsDropped(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.EventQueueLen = 1 })
	f.d.events.raise(Event{Type: verbs.EventPortActive, Port: 1})
	f.d.events.raise(Event{Type: verbs.EventPortErr, Port: 1})
	if e := nextEvent(t, f.d); e.Type != verbs.EventPortActive {
		t.Errorf("first event %v", e.Type)
	}
	noEvent(t, f.d)
	if n := f.d.EventsDropped(); n != 1 {
		t.Errorf("dropped %d, want 1", n)
	}
}

func TestQPNs(t *testing.T) {
	f := newFixture(t)
	seen := map[uint32]bool{}
	for range 200 {
		q, _ := f.qp(verbs.QPTypeUD)
		n := q.QPN()
		if n < 2 || n > 0xFFFFFE || seen[n] {
			t.Fatalf("QPN %#x (seen %v)", n, seen[n])
		}
		seen[n] = true
		if f.d.QP(n) != q {
			t.Fatalf("Device.QP(%#x) does not find it", n)
		}
	}
}

// TestSeededDevice: a device opened with a seed (the simulated mode) draws
// the same QPNs and keys as another with that seed; without one (every
// other mode) two devices draw different ones.
func TestSeededDevice(t *testing.T) {
	draw := func(seed *[32]byte) (qpns, keys []uint32) {
		f := newFixture(t, func(c *Config) { c.Seed = seed })
		for range 8 {
			q, _ := f.qp(verbs.QPTypeUD)
			qpns = append(qpns, q.QPN())
			mr, err := f.d.RegMR(f.pd, make([]byte, 64), memory.RemoteRead)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, mr.RKey())
		}
		return qpns, keys
	}
	same := func(a, b []uint32) int {
		n := 0
		for i := range a {
			if a[i] == b[i] {
				n++
			}
		}
		return n
	}
	seed := &[32]byte{42}
	q1, k1 := draw(seed)
	q2, k2 := draw(seed)
	if same(q1, q2) != len(q1) || same(k1, k2) != len(k1) {
		t.Fatalf("same seed: QPNs %x and %x, keys %x and %x", q1, q2, k1, k2)
	}
	q3, k3 := draw(nil)
	q4, k4 := draw(nil)
	if same(q3, q4) > 1 || same(k3, k4) > 1 || same(q1, q3) > 1 || same(k1, k3) > 1 {
		t.Fatalf("unseeded devices repeat each other or the seeded one: QPNs %x, %x; keys %x, %x", q3, q4, k3, k4)
	}
}
