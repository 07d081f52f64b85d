// Tests of the per-peer failed key check table: exact while it has room,
// bounded, and a persistent prober is never lost among many one-off peers.

package memory

import (
	"net/netip"
	"testing"
)

func peerN(i int) Peer {
	return Peer{Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), ID: uint32(i)}
}

func TestKeyFailuresExact(t *testing.T) {
	tb := newTable(t, Config{})
	for i := 1; i <= 10; i++ {
		for range i {
			tb.RecordKeyFailure(peerN(i))
		}
	}
	peers, total := tb.KeyFailures()
	if total != 55 || len(peers) != 10 {
		t.Fatalf("total %d over %d peers, want 55 over 10", total, len(peers))
	}
	for j, p := range peers {
		i := 10 - j // most first
		if p.Peer != peerN(i) || p.Failures != uint64(i) || p.Overestimate != 0 {
			t.Errorf("entry %d: %+v, want %v with %d", j, p, peerN(i), i)
		}
	}
}

// TestKeyFailuresBounded: 20000 peers failing once each, one guessing
// peer failing 1000 times among them; the table stays at its bound, the
// prober is first, its count at least its true one.
func TestKeyFailuresBounded(t *testing.T) {
	tb := newTable(t, Config{})
	prober := Peer{Addr: netip.MustParseAddr("fd00::66"), ID: 0x1234}
	for i := 0; i < 20000; i++ {
		tb.RecordKeyFailure(peerN(i))
		if i%20 == 0 {
			tb.RecordKeyFailure(prober)
		}
	}
	peers, total := tb.KeyFailures()
	if total != 21000 {
		t.Fatalf("total %d, want 21000", total)
	}
	if len(peers) != MaxKeyFailurePeers {
		t.Fatalf("%d entries, want the bound %d", len(peers), MaxKeyFailurePeers)
	}
	if peers[0].Peer != prober || peers[0].Failures < 1000 || peers[0].Failures-peers[0].Overestimate > 1000 {
		t.Fatalf("first entry %+v, want the prober with ≥ 1000 failures", peers[0])
	}
	if n := testing.AllocsPerRun(100, func() { tb.RecordKeyFailure(prober) }); n != 0 {
		t.Fatalf("%v allocations per record", n)
	}
}
