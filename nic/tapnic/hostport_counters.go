// Host port counters: what crossed between the wire and the host port, and
// what was lost on the way (DESIGN.md principle 4: every drop counted).

package tapnic

import "sync/atomic"

// HostPortCounters is a snapshot of a host port's counters.
type HostPortCounters struct {
	ToPortFrames   uint64 // frames from the wire written to the host port (both included)
	ToPortBytes    uint64
	Both           uint64 // of those, frames the NIC handled too (ARP replies, neighbour advertisements)
	ToPortErrors   uint64 // frames from the wire the host port's TAP refused (lost; a TAP that is down refuses all)
	FromPortFrames uint64 // frames from the host port put on the wire
	FromPortBytes  uint64
	FromPortErrors uint64 // frames from the host port the wire refused (too big, malformed, closing)
	ForeignSource  uint64 // frames from the host port not from the NIC's MAC (dropped)
}

type portCounters struct {
	toPortFrames, toPortBytes, both, toPortErrors                atomic.Uint64
	fromPortFrames, fromPortBytes, fromPortErrors, foreignSource atomic.Uint64
}

// Counters returns a snapshot of the host port's counters.
func (p *HostPort) Counters() HostPortCounters {
	c := &p.cnt
	return HostPortCounters{
		ToPortFrames: c.toPortFrames.Load(), ToPortBytes: c.toPortBytes.Load(), Both: c.both.Load(),
		ToPortErrors: c.toPortErrors.Load(), FromPortFrames: c.fromPortFrames.Load(),
		FromPortBytes: c.fromPortBytes.Load(), FromPortErrors: c.fromPortErrors.Load(),
		ForeignSource: c.foreignSource.Load(),
	}
}
