// The server's statistics: clients, reaped objects, client errors.

package server

import (
	"reflect"
	"sync/atomic"

	"github.com/rnic/rnic/nic/ibv"
)

// Stats are the server's counters since New.
type Stats struct {
	ClientsAccepted uint64 // connections accepted
	ClientsReaped   uint64 // sessions ended (client exit, kill, Close) and torn down
	ClientsRefused  uint64 // connections beyond --max-clients or --max-clients-per-uid
	// Objects a client left behind and the reaper freed.
	ReapedQPs  uint64
	ReapedSRQs uint64
	ReapedCQs  uint64
	ReapedAHs  uint64
	ReapedMRs  uint64
	ReapedPDs  uint64
	// ReapedBytes is the client memory (MR mappings) the reaper
	// unmapped; BytesUnmapped counts every MR mapping released,
	// deregistered by the client or reaped.
	ReapedBytes   uint64
	BytesUnmapped uint64
	// Client errors.
	BadMessages     uint64 // malformed control messages
	BadWQEs         uint64 // WQEs that were malformed or that the NIC refused
	RingIndexErrors uint64 // producer or consumer indices out of range
	LimitRejections uint64 // creations refused by a per-client limit
	EventsDropped   uint64 // events a client did not read in time
	// AcceptErrors counts accepts that failed for a passing reason (out
	// of descriptors or memory) and were tried again.
	AcceptErrors uint64
}

type stats struct {
	clientsAccepted, clientsReaped, clientsRefused                        atomic.Uint64
	reapedQPs, reapedSRQs, reapedCQs, reapedAHs, reapedMRs, reapedPDs     atomic.Uint64
	reapedBytes, bytesUnmapped                                            atomic.Uint64
	badMessages, badWQEs, ringIndexErrors, limitRejections, eventsDropped atomic.Uint64
	acceptErrors                                                          atomic.Uint64
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	c := &s.stats
	return Stats{
		ClientsAccepted: c.clientsAccepted.Load(), ClientsReaped: c.clientsReaped.Load(),
		ClientsRefused: c.clientsRefused.Load(),
		ReapedQPs:      c.reapedQPs.Load(), ReapedSRQs: c.reapedSRQs.Load(), ReapedCQs: c.reapedCQs.Load(),
		ReapedAHs: c.reapedAHs.Load(), ReapedMRs: c.reapedMRs.Load(), ReapedPDs: c.reapedPDs.Load(),
		ReapedBytes: c.reapedBytes.Load(), BytesUnmapped: c.bytesUnmapped.Load(),
		BadMessages: c.badMessages.Load(), BadWQEs: c.badWQEs.Load(), RingIndexErrors: c.ringIndexErrors.Load(),
		LimitRejections: c.limitRejections.Load(), EventsDropped: c.eventsDropped.Load(),
		AcceptErrors: c.acceptErrors.Load(),
	}
}

// statNames are the counter names, in snake case as rdma statistic has
// them, in field order.
var statNames = [...]string{
	"clients_accepted", "clients_reaped", "clients_refused", "reaped_qps", "reaped_srqs", "reaped_cqs", "reaped_ahs",
	"reaped_mrs", "reaped_pds", "reaped_bytes", "bytes_unmapped", "bad_messages", "bad_wqes",
	"ring_index_errors", "limit_rejections", "events_dropped", "accept_errors",
}

// Counters returns the counters as named values.
func (st Stats) Counters() []ibv.Counter {
	v := reflect.ValueOf(st)
	out := make([]ibv.Counter, v.NumField())
	for i := range out {
		out[i] = ibv.Counter{Name: statNames[i], Value: v.Field(i).Uint()}
	}
	return out
}
