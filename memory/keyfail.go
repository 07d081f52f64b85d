// Failed remote key checks, counted per peer: who is probing this NIC's
// memory. A peer guessing rkeys (key.go makes that take ~2^32 / live keys
// tries) shows up here long before it succeeds.
//
// The table is bounded whatever the number of peers: it keeps the
// MaxKeyFailurePeers peers with the most failures by the Space-Saving
// algorithm (Metwally, Agrawal, El Abbadi 2005). When a new peer fails and
// the table is full, it replaces the entry with the fewest failures and
// inherits that count plus one, so a peer's count is never underestimated
// and any peer with more than total/MaxKeyFailurePeers failures is in it.
// Overestimate records how much of a count may be inherited.

package memory

import (
	"net/netip"
	"slices"
	"sync"
)

// MaxKeyFailurePeers bounds the per-peer failed key check table.
const MaxKeyFailurePeers = 64

// Peer names the remote end of a failed key check: its address, and its
// QPN (RoCE) or TCP port (iWARP).
type Peer struct {
	Addr netip.Addr
	ID   uint32
}

// PeerFailures is one peer's count of failed remote key checks.
type PeerFailures struct {
	Peer     Peer
	Failures uint64
	// Overestimate is how many of Failures may belong to peers this entry
	// replaced (0 when the peer has been counted since its first failure).
	Overestimate uint64
}

// keyFailures is the bounded per-peer table. Recording happens only on the
// failure path, so a mutex is enough.
type keyFailures struct {
	mu      sync.Mutex
	entries [MaxKeyFailurePeers]PeerFailures
	n       int
	total   uint64
}

func (k *keyFailures) record(p Peer) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.total++
	least := 0
	for i := 0; i < k.n; i++ {
		if k.entries[i].Peer == p {
			k.entries[i].Failures++
			return
		}
		if k.entries[i].Failures < k.entries[least].Failures {
			least = i
		}
	}
	if k.n < len(k.entries) {
		k.entries[k.n] = PeerFailures{Peer: p, Failures: 1}
		k.n++
		return
	}
	e := &k.entries[least]
	*e = PeerFailures{Peer: p, Failures: e.Failures + 1, Overestimate: e.Failures}
}

// RecordKeyFailure counts one failed remote key check (a bad rkey or STag,
// or one refused for its PD, QP, access rights or bounds) by peer p. Engines
// call it where they answer the failure with a NAK, a Terminate or a drop.
func (t *Table) RecordKeyFailure(p Peer) { t.keyFails.record(p) }

// KeyFailures returns the peers with the most failed remote key checks, most
// first (at most MaxKeyFailurePeers), and the total over all peers.
func (t *Table) KeyFailures() (peers []PeerFailures, total uint64) {
	k := &t.keyFails
	k.mu.Lock()
	peers = slices.Clone(k.entries[:k.n])
	total = k.total
	k.mu.Unlock()
	slices.SortStableFunc(peers, func(a, b PeerFailures) int {
		switch {
		case a.Failures > b.Failures:
			return -1
		case a.Failures < b.Failures:
			return 1
		}
		return 0
	})
	return peers, total
}
