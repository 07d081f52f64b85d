package tap

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/rnic/rnic/transport/clock"
)

func withClock(clk clock.Clock) hostOpt { return func(c *HostConfig) { c.Clock = clk } }

// checkHeld verifies that out is in, sent to dst from the host: MACs
// patched, every other byte identical.
func checkHeld(t testing.TB, out, in []byte, dst [6]byte) {
	t.Helper()
	ethOf(t, out, dst, hostMAC, binary.BigEndian.Uint16(in[12:]))
	if !bytes.Equal(out[12:], in[12:]) {
		t.Errorf("frame changed beyond the MACs:\n got %x\nwant %x", out, in)
	}
}

func TestResolveIPv4(t *testing.T) {
	h, w := newTestHost(t, false)
	if _, ok := h.Lookup(peer4); ok {
		t.Fatal("Lookup hit on an empty cache")
	}
	// The miss started resolution.
	wantARP(t, w.next(), broadcastMAC, arpRequest, hostMAC, host4, [6]byte{}, peer4)
	frame := roceFrame(t, hostMAC, broadcastMAC, host4, peer4, 0, []byte("held while resolving"))
	orig := bytes.Clone(frame)
	if err := h.RoCE().Send(frame); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(frame, orig) {
		t.Error("Send modified the caller's frame")
	}
	// No second request for the same INCOMPLETE entry; the answer releases
	// the held frame.
	w.send(arpFrame(t, peerMAC, hostMAC, arpReply, peerMAC, peer4, hostMAC, host4))
	checkHeld(t, w.next(), frame, peerMAC)
	if mac, ok := h.Lookup(peer4); !ok || mac != peerMAC {
		t.Errorf("Lookup after the reply: %x %v", mac, ok)
	}
	if s, _ := h.neighborState(peer4); s != nudReachable {
		t.Errorf("state %v, want REACHABLE", s)
	}
	// Resolved: straight out.
	if err := h.RoCE().Send(frame); err != nil {
		t.Fatal(err)
	}
	checkHeld(t, w.next(), frame, peerMAC)
	c := h.Counters()
	if c.ARPRequestsTx != 1 || c.ARPRepliesRx != 1 || c.RoCETx != 2 {
		t.Errorf("counters %+v", c)
	}
	// Off link: refused, no resolution.
	if _, ok := h.Lookup(netip.MustParseAddr("10.1.1.1")); ok {
		t.Error("off-link Lookup hit")
	}
	off := roceFrame(t, hostMAC, broadcastMAC, host4, netip.MustParseAddr("10.1.1.1"), 0, nil)
	if err := h.RoCE().Send(off); err == nil {
		t.Error("off-link Send accepted")
	}
	big := roceFrame(t, hostMAC, broadcastMAC, host4, peer4, 0, make([]byte, 1500))
	if err := h.RoCE().Send(big); err == nil {
		t.Error("oversized Send accepted")
	}
	if c := h.Counters(); c.NoRoute != 1 || c.TooBig != 1 || c.ARPRequestsTx != 1 {
		t.Errorf("counters %+v", c)
	}
}

func TestResolveFailure(t *testing.T) {
	clk := clock.NewVirtual()
	ncfg := NeighborConfig{RetransTimer: 700 * time.Millisecond, MaxProbes: 4, QueueLen: 2}
	h, w := newTestHost(t, false, withClock(clk), func(c *HostConfig) { c.Neighbor = ncfg })
	frames := make([][]byte, 3)
	for i := range frames {
		frames[i] = roceFrame(t, hostMAC, broadcastMAC, host4, peer4, 0, []byte{byte(i)})
		if err := h.RoCE().Send(frames[i]); err != nil {
			t.Fatal(err)
		}
	}
	var times []time.Duration
	wantARP(t, w.next(), broadcastMAC, arpRequest, hostMAC, host4, [6]byte{}, peer4)
	times = append(times, clk.Now())
	for clk.Step() {
		if h.Counters().ARPRequestsTx > uint64(len(times)) {
			wantARP(t, w.next(), broadcastMAC, arpRequest, hostMAC, host4, [6]byte{}, peer4)
			times = append(times, clk.Now())
		}
	}
	if len(times) != ncfg.MaxProbes {
		t.Fatalf("%d requests, want %d", len(times), ncfg.MaxProbes)
	}
	for i, at := range times {
		if want := time.Duration(i) * ncfg.RetransTimer; at != want {
			t.Errorf("request %d at %v, want %v", i, at, want)
		}
	}
	if now, want := clk.Now(), time.Duration(ncfg.MaxProbes)*ncfg.RetransTimer; now != want {
		t.Errorf("gave up at %v, want %v", now, want)
	}
	c := h.Counters()
	if c.ResolveFailed != 1 || c.ResolveFailedFrames != 2 || c.QueueDropped != 1 {
		t.Errorf("resolve_failed %d frames %d queue_dropped %d; want 1 2 1", c.ResolveFailed, c.ResolveFailedFrames, c.QueueDropped)
	}
	if s, _ := h.neighborState(peer4); s != nudNone {
		t.Errorf("failed entry kept: %v", s)
	}
	// The next send starts over.
	if err := h.RoCE().Send(frames[0]); err != nil {
		t.Fatal(err)
	}
	wantARP(t, w.next(), broadcastMAC, arpRequest, hostMAC, host4, [6]byte{}, peer4)
	if s, _ := h.neighborState(peer4); s != nudIncomplete {
		t.Errorf("state %v, want INCOMPLETE", s)
	}
}

func TestQueueOverflowDropsOldest(t *testing.T) {
	clk := clock.NewVirtual()
	h, w := newTestHost(t, false, withClock(clk), func(c *HostConfig) { c.Neighbor = NeighborConfig{QueueLen: 3} })
	var frames [][]byte
	for i := range 5 {
		f := roceFrame(t, hostMAC, broadcastMAC, host4, peer4, 0, []byte{byte(i), 1, 2, 3})
		frames = append(frames, f)
		if err := h.RoCE().Send(f); err != nil {
			t.Fatal(err)
		}
	}
	w.next() // the ARP request
	w.send(arpFrame(t, peerMAC, hostMAC, arpReply, peerMAC, peer4, hostMAC, host4))
	for _, f := range frames[2:] { // the newest three, in order
		checkHeld(t, w.next(), f, peerMAC)
	}
	if c := h.Counters(); c.QueueDropped != 2 {
		t.Errorf("queue_dropped %d, want 2", c.QueueDropped)
	}
}

// TestQueueHoldsMessageBurst: the first RC message to a neighbour not yet
// resolved goes out whole once the ARP reply comes. With the pre-3.3 Linux
// default of 3 queued frames, a 4-packet SEND (4 KiB at path MTU 1024,
// Debian's ibv_rc_pingpong -s 4096 in the lab) lost its First packet, and
// the peer NAKed the rest with a PSN sequence error; Linux queues 101 by
// default (unres_qlen from unres_qlen_bytes), and so does the cache now.
func TestQueueHoldsMessageBurst(t *testing.T) {
	clk := clock.NewVirtual()
	h, w := newTestHost(t, false, withClock(clk))
	var frames [][]byte
	for i := range 64 { // a 64 KiB message at path MTU 1024
		f := roceFrame(t, hostMAC, broadcastMAC, host4, peer4, 0, append(make([]byte, 1020), byte(i), 1, 2, 3))
		frames = append(frames, f)
		if err := h.RoCE().Send(f); err != nil {
			t.Fatal(err)
		}
	}
	w.next() // the ARP request
	w.send(arpFrame(t, peerMAC, hostMAC, arpReply, peerMAC, peer4, hostMAC, host4))
	for i, f := range frames {
		if checkHeld(t, w.next(), f, peerMAC); t.Failed() {
			t.Fatalf("frame %d of %d", i, len(frames))
		}
	}
	if c := h.Counters(); c.QueueDropped != 0 {
		t.Errorf("queue_dropped %d, want 0", c.QueueDropped)
	}
}

// TestNUDCycle walks REACHABLE → STALE → DELAY → PROBE → REACHABLE, and
// PROBE → INCOMPLETE when the probes go unanswered.
func TestNUDCycle(t *testing.T) {
	clk := clock.NewVirtual()
	ncfg := NeighborConfig{}.withDefaults()
	h, w := newTestHost(t, false, withClock(clk))
	frame := roceFrame(t, hostMAC, broadcastMAC, host4, peer4, 0, []byte("x"))
	state := func(want nudState) {
		t.Helper()
		if s, _ := h.neighborState(peer4); s != want {
			t.Fatalf("at %v: state %v, want %v", clk.Now(), s, want)
		}
	}
	h.RoCE().Send(frame)
	w.next()
	w.send(arpFrame(t, peerMAC, hostMAC, arpReply, peerMAC, peer4, hostMAC, host4))
	checkHeld(t, w.next(), frame, peerMAC)
	state(nudReachable)

	clk.RunFor(ncfg.ReachableTime - time.Millisecond)
	state(nudReachable)
	clk.RunFor(time.Millisecond)
	state(nudStale)
	if _, ok := h.Lookup(peer4); !ok {
		t.Error("STALE entry not usable")
	}
	state(nudStale) // Lookup alone does not start DELAY

	// Sending on STALE: out at once with the cached MAC, DELAY.
	h.RoCE().Send(frame)
	checkHeld(t, w.next(), frame, peerMAC)
	state(nudDelay)
	clk.RunFor(ncfg.DelayFirstProbe)
	state(nudProbe)
	// The probe is unicast to the cached MAC.
	wantARP(t, w.next(), peerMAC, arpRequest, hostMAC, host4, [6]byte{}, peer4)
	// Frames still go out directly while probing.
	h.RoCE().Send(frame)
	checkHeld(t, w.next(), frame, peerMAC)
	w.send(arpFrame(t, peerMAC, hostMAC, arpReply, peerMAC, peer4, hostMAC, host4))
	w.barrier()
	state(nudReachable)

	// Again, but nobody answers the probes.
	clk.RunFor(ncfg.ReachableTime)
	state(nudStale)
	h.RoCE().Send(frame)
	w.next()
	clk.RunFor(ncfg.DelayFirstProbe)
	start := clk.Now()
	for i := range ncfg.MaxProbes {
		wantARP(t, w.next(), peerMAC, arpRequest, hostMAC, host4, [6]byte{}, peer4)
		if clk.Now()-start != time.Duration(i)*ncfg.RetransTimer {
			t.Errorf("probe %d at +%v", i, clk.Now()-start)
		}
		if i < ncfg.MaxProbes-1 {
			clk.RunFor(ncfg.RetransTimer)
			state(nudProbe)
		}
	}
	clk.RunFor(ncfg.RetransTimer)
	state(nudIncomplete)
	// Back to broadcast resolution, frames held again.
	wantARP(t, w.next(), broadcastMAC, arpRequest, hostMAC, host4, [6]byte{}, peer4)
	if _, ok := h.Lookup(peer4); ok {
		t.Error("INCOMPLETE entry usable")
	}
	h.RoCE().Send(frame)
	newMAC := [6]byte{0x02, 0, 0, 0, 0, 0x42}
	w.send(arpFrame(t, newMAC, hostMAC, arpReply, newMAC, peer4, hostMAC, host4))
	checkHeld(t, w.next(), frame, newMAC)
	state(nudReachable)
}

func TestLookupOwnAndStatic(t *testing.T) {
	h, w := newTestHost(t, false)
	if _, ok := h.Lookup(host4); ok {
		t.Error("own address resolved")
	}
	if mac, ok := h.Lookup(netip.MustParseAddr("ff02::1")); !ok || mac != [6]byte{0x33, 0x33, 0, 0, 0, 1} {
		t.Errorf("ff02::1 → %x %v", mac, ok)
	}
	if mac, ok := h.Lookup(netip.MustParseAddr("239.1.2.3")); !ok || mac != [6]byte{1, 0, 0x5e, 1, 2, 3} {
		t.Errorf("239.1.2.3 → %x %v", mac, ok)
	}
	if mac, ok := h.Lookup(netip.MustParseAddr("192.0.2.255")); !ok || mac != broadcastMAC {
		t.Errorf("192.0.2.255 → %x %v", mac, ok)
	}
	// Our own address is not resolved: the frame turns around inside the
	// NIC (loopback.go).
	if err := h.RoCE().Send(roceFrame(t, hostMAC, broadcastMAC, host4, host4, 0, nil)); err != nil {
		t.Errorf("Send to our own address: %v", err)
	}
	w.barrier() // and nothing was sent for any of it
	if c := h.Counters(); c.LoopbackFrames != 1 || c.ARPRequestsTx != 0 {
		t.Errorf("loopback_frames %d arp_requests_tx %d", c.LoopbackFrames, c.ARPRequestsTx)
	}
}
