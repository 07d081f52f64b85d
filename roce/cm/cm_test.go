package cm

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/roce"
	"github.com/rnic/rnic/transport/clock"
)

// fakePort links two Managers through the virtual clock (each MAD arrives
// after a microsecond), dropping what drop picks.
type fakePort struct {
	clk  *clock.Virtual
	self netip.Addr
	peer **Manager
	drop func(AttrID) bool
	mu   sync.Mutex
	sent []AttrID
}

func (p *fakePort) SendGSI(s *roce.GSISend) error {
	b := append([]byte(nil), s.MAD...)
	a := MAD(b).AttrID()
	p.mu.Lock()
	p.sent = append(p.sent, a)
	p.mu.Unlock()
	if p.drop != nil && p.drop(a) {
		return nil
	}
	p.clk.AfterFunc(time.Microsecond, func() { (*p.peer).Deliver(p.self, s.Dst, b) })
	return nil
}

func (p *fakePort) count(a AttrID) (n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.sent {
		if s == a {
			n++
		}
	}
	return n
}

// TestDuplicateREQGetsMRA: while the passive consumer has not answered,
// a retransmitted REQ is answered with an MRA (§12.9.5.1); the MRA makes
// the active side wait longer instead of retrying; the late REP then
// connects both.
func TestDuplicateREQGetsMRA(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	var ma, mb *Manager
	pa := &fakePort{clk: clk, self: a, peer: &mb}
	pb := &fakePort{clk: clk, self: b, peer: &ma}
	var pending *ID
	ma, _ = New(Config{Port: pa, Clock: clk, GUID: 1, ResponseTimeout: 14, PacketLifeTime: 10, MaxRetries: 3})
	mb, _ = New(Config{Port: pb, Clock: clk, GUID: 2, ResponseTimeout: 14, PacketLifeTime: 10, MaxRetries: 3,
		OnREQ: func(id *ID, r *REQ) bool { pending = id; return true }})
	var got []EventType
	id, err := ma.Connect(b, a, REQ{LocalQPN: 5}, func(e Event) error { got = append(got, e.Type); return nil })
	if err != nil {
		t.Fatal(err)
	}
	wait := ma.retryTimeout(14)
	clk.RunFor(wait + wait/2) // the REQ is retried once; b answers the duplicate with an MRA
	if pa.count(AttrREQ) != 2 || pb.count(AttrMRA) != 1 || pending == nil || id.State() != StateMRARcvd {
		t.Fatalf("REQs %d MRAs %d state %v", pa.count(AttrREQ), pb.count(AttrMRA), id.State())
	}
	clk.RunFor(wait) // the MRA's service timeout (14) + 2 × packet life holds off retries
	if pa.count(AttrREQ) != 2 {
		t.Fatalf("REQ retried during the MRA wait: %d", pa.count(AttrREQ))
	}
	if err := pending.Accept(REP{LocalQPN: 6}); err != nil {
		t.Fatal(err)
	}
	clk.RunFor(time.Millisecond)
	if id.State() != StateEstablished || pending.State() != StateEstablished || len(got) != 2 || got[0] != EventREP || got[1] != EventEstablished {
		t.Fatalf("states %v %v, events %v", id.State(), pending.State(), got)
	}
	// A DREQ whose DREP is lost is retried; the duplicate DREQ in
	// TimeWait is answered with the DREP again.
	n := 0
	pb.drop = func(a AttrID) bool { n++; return a == AttrDREP && n == 1 }
	id.Disconnect(nil)
	clk.RunFor(2 * wait)
	if pb.count(AttrDREP) != 2 || id.State() != StateTimeWait {
		t.Fatalf("DREPs %d, state %v", pb.count(AttrDREP), id.State())
	}
	clk.RunFor(10 * wait)
	if id.State() != StateClosed || len(ma.ids) != 0 || len(mb.ids) != 0 {
		t.Fatalf("after TimeWait: %v, %d/%d IDs left", id.State(), len(ma.ids), len(mb.ids))
	}
}

// TestParseAllocs: parsing and decoding allocate nothing.

// TestTimeWaitDropsHandler: once both sides were told of the disconnect,
// the IDs in TimeWait hold no handler (and so none of the application's
// connection: its QP and buffers), while they still answer duplicates for
// TimeWait.
func TestTimeWaitDropsHandler(t *testing.T) {
	clk := clock.NewVirtual()
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	var ma, mb *Manager
	pa := &fakePort{clk: clk, self: a, peer: &mb}
	pb := &fakePort{clk: clk, self: b, peer: &ma}
	var passive *ID
	var gotA, gotB []EventType
	ma, _ = New(Config{Port: pa, Clock: clk, GUID: 1})
	mb, _ = New(Config{Port: pb, Clock: clk, GUID: 2, OnREQ: func(id *ID, r *REQ) bool {
		passive = id
		id.SetHandler(func(e Event) error { gotB = append(gotB, e.Type); return nil })
		return true
	}})
	id, err := ma.Connect(b, a, REQ{LocalQPN: 5}, func(e Event) error { gotA = append(gotA, e.Type); return nil })
	if err != nil {
		t.Fatal(err)
	}
	clk.RunFor(time.Millisecond)
	if passive == nil {
		t.Fatal("no REQ arrived")
	}
	if err := passive.Accept(REP{LocalQPN: 6}); err != nil {
		t.Fatal(err)
	}
	clk.RunFor(time.Millisecond)
	if id.State() != StateEstablished {
		t.Fatalf("state %v", id.State())
	}
	if id.handler == nil || passive.handler == nil {
		t.Fatal("an established ID lost its handler")
	}
	id.Disconnect(nil)
	clk.RunFor(time.Millisecond)
	if id.State() != StateTimeWait || passive.State() != StateTimeWait {
		t.Fatalf("states %v %v, want TimeWait", id.State(), passive.State())
	}
	if gotA[len(gotA)-1] != EventDisconnected || gotB[len(gotB)-1] != EventDisconnected {
		t.Fatalf("events %v / %v, want both to end with Disconnected", gotA, gotB)
	}
	ma.mu.Lock()
	ha := id.handler
	ma.mu.Unlock()
	mb.mu.Lock()
	hb := passive.handler
	mb.mu.Unlock()
	if ha != nil || hb != nil {
		t.Errorf("IDs in TimeWait still hold their handlers (active %v, passive %v)", ha != nil, hb != nil)
	}
}
