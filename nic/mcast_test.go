package nic

import (
	"net/netip"
	"sync"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

// mcastFake is a provider whose engine has multicast: it records what
// nic asks of it.
type mcastFake struct {
	fakeProvider
	mu       sync.Mutex
	attached map[netip.Addr]map[uint32]bool
	calls    int
}

func (p *mcastFake) AttachMcast(g netip.Addr, qpn uint32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.attached == nil {
		p.attached = make(map[netip.Addr]map[uint32]bool)
	}
	if p.attached[g] == nil {
		p.attached[g] = make(map[uint32]bool)
	}
	p.attached[g][qpn] = true
	p.calls++
	return nil
}

func (p *mcastFake) DetachMcast(g netip.Addr, qpn uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.attached[g], qpn)
	p.calls++
}

func (p *mcastFake) members(g netip.Addr) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.attached[verbs.GIDFromAddr(g)])
}

func mcastFixture(t *testing.T) (*fixture, *mcastFake) {
	p := &mcastFake{}
	return newFixture(t, func(c *Config) { c.Provider = p }), p
}

var group = netip.MustParseAddr("230.0.0.1")

// The limits are rxe's, and reported only by a device whose engine has
// multicast.
func TestMcastAttrs(t *testing.T) {
	f, _ := mcastFixture(t)
	a := f.d.Query()
	if a.MaxMcastGrp != 8192 || a.MaxMcastQPAttach != 56 || a.MaxTotalMcastQPAttach != 0x70000 {
		t.Fatalf("multicast limits %d/%d/%d, want rxe's 8192/56/458752", a.MaxMcastGrp, a.MaxMcastQPAttach, a.MaxTotalMcastQPAttach)
	}
	plain := newFixture(t)
	if a := plain.d.Query(); a.MaxMcastGrp != 0 || a.MaxMcastQPAttach != 0 || a.MaxTotalMcastQPAttach != 0 {
		t.Fatal("a device without multicast reports multicast limits")
	}
	q, _ := plain.qp(verbs.QPTypeUD)
	wantIs(t, "attach without multicast", q.AttachMcast(group, 0), verbs.ErrNotSupported)
}

// The rules of ibv_attach_mcast as the kernel and rxe apply them.
func TestMcastAttachRules(t *testing.T) {
	f, p := mcastFixture(t)
	ud, _ := f.qp(verbs.QPTypeUD)
	rc, _ := f.qp(verbs.QPTypeRC)
	wantIs(t, "attach an RC QP", rc.AttachMcast(group, 0), verbs.ErrInvalid)
	wantIs(t, "attach to a unicast GID", ud.AttachMcast(netip.MustParseAddr("10.0.0.9"), 0), verbs.ErrInvalid)
	wantIs(t, "attach to ff02::1 on an RC QP", rc.AttachMcast(netip.MustParseAddr("ff02::1"), 0), verbs.ErrInvalid)
	if err := ud.AttachMcast(netip.MustParseAddr("ff0e::1"), 0xFFFF); err != nil {
		t.Fatalf("attach to an IPv6 group: %v", err)
	}
	for range 2 {
		if err := ud.AttachMcast(group, 0); err != nil {
			t.Fatalf("attach: %v", err)
		}
	}
	if p.members(group) != 1 || p.calls != 2 {
		t.Fatalf("engine saw %d calls, %d members: attaching twice must change nothing", p.calls, p.members(group))
	}
	if err := ud.DetachMcast(group, 0); err != nil {
		t.Fatalf("detach: %v", err)
	}
	wantIs(t, "detach twice", ud.DetachMcast(group, 0), verbs.ErrInvalid)
	wantIs(t, "detach from a unicast GID", ud.DetachMcast(netip.MustParseAddr("10.0.0.9"), 0), verbs.ErrInvalid)
	if got := f.d.McastGroups(); len(got) != 1 || got[verbs.GIDFromAddr(netip.MustParseAddr("ff0e::1"))] != 1 {
		t.Fatalf("groups %v, want only ff0e::1", got)
	}
}

// At most 56 QPs in a group and 8192 groups: ENOMEM beyond, as rxe.
func TestMcastLimits(t *testing.T) {
	f, _ := mcastFixture(t)
	for i := range MaxMcastQPAttach + 1 {
		q, _ := f.qp(verbs.QPTypeUD)
		err := q.AttachMcast(group, 0)
		if i < MaxMcastQPAttach && err != nil {
			t.Fatalf("QP %d: %v", i, err)
		}
		if i == MaxMcastQPAttach {
			wantIs(t, "the 57th QP of a group", err, verbs.ErrNoMemory)
		}
	}
	q, _ := f.qp(verbs.QPTypeUD)
	for i := range MaxMcastGrp {
		g := netip.AddrFrom4([4]byte{231, byte(i >> 16), byte(i >> 8), byte(i)})
		err := q.AttachMcast(g, 0)
		if i < MaxMcastGrp-1 && err != nil { // group 230.0.0.1 is the first
			t.Fatalf("group %d: %v", i, err)
		}
		if i == MaxMcastGrp-1 {
			wantIs(t, "group 8193", err, verbs.ErrNoMemory)
		}
	}
}

// A destroyed QP leaves its groups; the last member's leaving drops the
// group.
func TestMcastDestroyLeaves(t *testing.T) {
	f, p := mcastFixture(t)
	a, _ := f.qp(verbs.QPTypeUD)
	b, _ := f.qp(verbs.QPTypeUD)
	for _, q := range []*QP{a, b} {
		if err := q.AttachMcast(group, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Destroy(); err != nil {
		t.Fatal(err)
	}
	if p.members(group) != 1 || f.d.McastGroups()[verbs.GIDFromAddr(group)] != 1 {
		t.Fatal("a destroyed QP stayed attached")
	}
	wantIs(t, "attach a destroyed QP", a.AttachMcast(group, 0), verbs.ErrDestroyed)
	if err := b.Destroy(); err != nil {
		t.Fatal(err)
	}
	if len(f.d.McastGroups()) != 0 || p.members(group) != 0 {
		t.Fatal("the group outlived its last member")
	}
}
