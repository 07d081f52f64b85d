// Budgets above the client: what all clients of one uid, and all clients
// together, may map into the daemon. A per-client limit alone lets one
// user open many clients (126 sessions of 1 TiB sparse memfds filled the
// daemon's address space; ~20,000 MRs its map count), so memory the
// daemon maps for clients is also counted per uid and daemon-wide.

package server

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// mapped is what one uid, or the whole daemon, has mapped for clients,
// and the daemon's own memory for their queues.
type mapped struct {
	qps   int    // QPs (bounded per tenant only)
	mrs   int    // MR mappings
	bytes uint64 // MR and ring mappings
	queue uint64 // the engines' per-WR state of QPs (Go heap)
}

// budget counts mappings per uid and in total against the limits.
type budget struct {
	lim   *Limits
	mu    sync.Mutex
	uids  map[tenantUID]*mapped
	total mapped
}

func newBudget(lim *Limits) *budget {
	return &budget{lim: lim, uids: make(map[tenantUID]*mapped)}
}

// take counts d more for uid and its tenant t (QPs, MR mappings, mapped
// bytes, queue state), or refuses it, saying which limit and flag refused.
func (b *budget) take(uid uint32, t *tenant, d mapped) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.uids[tenantUID{t, uid}]
	if u == nil {
		u = &mapped{}
	}
	who := "uid " + strconv.Itoa(int(uid))
	l := b.lim
	switch {
	case u.mrs+d.mrs > l.MaxMRsPerUID:
		return budgetError(l.MaxMRsPerUID, "MRs of "+who, "--max-mrs-per-uid")
	case over(u.bytes, d.bytes, l.MaxMappedBytesPerUID):
		return budgetError(l.MaxMappedBytesPerUID, "bytes mapped for "+who, "--max-mapped-bytes-per-uid")
	case over(u.queue, d.queue, l.MaxQueueBytesPerUID):
		return budgetError(l.MaxQueueBytesPerUID, "bytes of queue state for "+who, "--max-queue-bytes-per-uid")
	case b.total.mrs+d.mrs > l.MaxMappings:
		return budgetError(l.MaxMappings, "MRs of all clients", "--max-mappings")
	case over(b.total.bytes, d.bytes, l.MaxMappedBytes):
		return budgetError(l.MaxMappedBytes, "bytes mapped for all clients", "--max-mapped-bytes")
	case over(b.total.queue, d.queue, l.MaxQueueBytes):
		return budgetError(l.MaxQueueBytes, "bytes of queue state for all clients", "--max-queue-bytes")
	}
	if err := t.takeCheck(d); err != nil {
		return err
	}
	t.use.add(d)
	u.add(d)
	b.uids[tenantUID{t, uid}] = u
	b.total.add(d)
	return nil
}

// over reports whether have+more passes limit (or wraps).
func over(have, more, limit uint64) bool { return have+more > limit || have+more < more }

// give returns what take counted.
func (b *budget) give(uid uint32, t *tenant, d mapped) {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.uids[tenantUID{t, uid}]
	if u == nil {
		return
	}
	t.use.sub(d)
	u.sub(d)
	b.total.sub(d)
	if *u == (mapped{}) {
		delete(b.uids, tenantUID{t, uid})
	}
}

// add adds d to m; sub takes it away.
func (m *mapped) add(d mapped) {
	m.qps, m.mrs, m.bytes, m.queue = m.qps+d.qps, m.mrs+d.mrs, m.bytes+d.bytes, m.queue+d.queue
}
func (m *mapped) sub(d mapped) {
	m.qps, m.mrs, m.bytes, m.queue = m.qps-d.qps, m.mrs-d.mrs, m.bytes-d.bytes, m.queue-d.queue
}

// Per-WR state the engines keep in the daemon's heap, whatever is posted
// (measured on amd64, rounded up): a send slot (the WR, its PSN and
// retry state) with room for its SGL and inline data, a receive slot with
// its SGL. TestQueueBytesEstimate checks it against the heap.
const (
	sendSlotBytes = 256
	recvSlotBytes = 64
	sgeBytes      = 16
)

// queueBytes estimates the heap a QP of capacity c costs the daemon: the
// engines allocate their queues whole at creation (2^20 WRs each way made
// ~240 MB), so the estimate is charged before the QP exists.
func queueBytes(c verbs.QPCap) uint64 {
	send := uint64(c.MaxSendWR) * (sendSlotBytes + uint64(max(c.MaxSendSGE, 1))*sgeBytes + uint64(c.MaxInlineData))
	recv := uint64(c.MaxRecvWR) * (recvSlotBytes + uint64(max(c.MaxRecvSGE, 1))*sgeBytes)
	return send + recv
}

func budgetError[N int | uint64](n N, what, flag string) error {
	return fmt.Errorf("%w: %v %s (rnicd %s)", proto.ErrLimit, n, what, flag)
}

// defaultMappings is how many MRs all clients together may have: half the
// kernel's per-process map count (vm.max_map_count), so that the daemon's
// own mappings (rings, heap, stacks) always find room.
func defaultMappings() int {
	const fallback = 65530 // the kernel's default
	n := fallback
	if b, err := os.ReadFile("/proc/sys/vm/max_map_count"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 {
			n = v
		}
	}
	return n / 2
}
