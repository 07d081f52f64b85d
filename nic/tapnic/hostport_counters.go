// Host port counters: what crossed between the wire and the host port, and
// what was lost on the way (nic/README.md, principle 4: every drop counted).

package tapnic

import (
	"sync/atomic"

	"github.com/rnic/rnic/nic/ibv"
)

// HostPortCounters is a snapshot of a host port's counters.
type HostPortCounters struct {
	ToPortFrames   uint64 // frames from the wire written to the host port (both included)
	ToPortBytes    uint64
	Both           uint64 // of those, frames the NIC handled too (ARP replies, neighbour advertisements)
	ToPortErrors   uint64 // frames from the wire the host port's TAP refused (lost; a TAP that is down refuses all)
	FromPortFrames uint64 // frames from the host port put on the wire
	FromPortBytes  uint64
	FromPortErrors uint64 // frames from the host port the wire refused (too big, malformed, closing)
	ForeignSource  uint64 // frames from the host port not from the NIC's MAC, or (a user's port) not from its addresses (dropped)
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

// HostPortCounters are the counters of the NIC's host port, named as
// rnic stat shows them, zero while no port is attached (so that the list
// of a TAP-mode NIC's counters does not change with attachments).
func (n *NIC) HostPortCounters() []ibv.Counter {
	n.portMu.Lock()
	p := n.port
	n.portMu.Unlock()
	var c HostPortCounters
	if p != nil {
		c = p.Counters()
	}
	return []ibv.Counter{
		{Name: "host_port_to_frames", Value: c.ToPortFrames}, {Name: "host_port_to_bytes", Value: c.ToPortBytes},
		{Name: "host_port_to_both", Value: c.Both}, {Name: "host_port_to_errors", Value: c.ToPortErrors},
		{Name: "host_port_from_frames", Value: c.FromPortFrames}, {Name: "host_port_from_bytes", Value: c.FromPortBytes},
		{Name: "host_port_from_errors", Value: c.FromPortErrors}, {Name: "host_port_foreign_source", Value: c.ForeignSource},
	}
}
