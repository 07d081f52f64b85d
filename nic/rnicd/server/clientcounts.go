// Counters per client: what each connection made the daemon do (requests,
// work requests, completions, doorbells, errors), for rnic stat's clients
// view; a tenant's sum those of its clients that left.

package server

import (
	"reflect"
	"sync/atomic"

	"github.com/rnic/rnic/nic/ibv"
)

// ClientCounts are one client's counters, or a tenant's totals.
type ClientCounts struct {
	Requests        uint64 // control requests and notices served
	RequestErrors   uint64 // requests answered with an error
	LimitRejects    uint64 // requests refused by a limit
	SendWRs         uint64 // send WQEs the drainers took from its send queues
	RecvWRs         uint64 // receive WQEs taken from its receive queues and SRQs
	Completions     uint64 // completions the movers put in its CQ rings
	Doorbells       uint64 // doorbells it rang (a bit taken per queue woken)
	ClientErrors    uint64 // malformed messages and WQEs, runaway ring indices
	EventsDropped   uint64 // events it did not read in time
	EventsSent      uint64 // async and rdma_cm events queued for it
	RegisteredMRs   uint64 // MRs it registered
	RegisteredBytes uint64 // bytes of memory it registered (whole memfds)
}

// clientCountNames are the counters' names in rnic stat, in field order.
var clientCountNames = [...]string{
	"requests", "request_errors", "limit_rejections", "send_wrs", "recv_wrs", "completions", "doorbells",
	"client_errors", "events_dropped", "events_sent", "mrs_registered", "bytes_registered",
}

// Counters returns the counters as named values.
func (c ClientCounts) Counters() []ibv.Counter {
	v := reflect.ValueOf(c)
	out := make([]ibv.Counter, v.NumField())
	for i := range out {
		out[i] = ibv.Counter{Name: clientCountNames[i], Value: v.Field(i).Uint()}
	}
	return out
}

// add adds o to c.
func (c *ClientCounts) add(o ClientCounts) {
	cv, ov := reflect.ValueOf(c).Elem(), reflect.ValueOf(o)
	for i := range cv.NumField() {
		f := cv.Field(i)
		f.SetUint(f.Uint() + ov.Field(i).Uint())
	}
}

// clientCounts is ClientCounts as the session's goroutines count them.
type clientCounts struct {
	requests, requestErrors, limitRejects atomic.Uint64
	sendWRs, recvWRs, completions         atomic.Uint64
	doorbells, clientErrors               atomic.Uint64
	eventsDropped, eventsSent             atomic.Uint64
	mrs, mrBytes                          atomic.Uint64
}

// load returns a snapshot.
func (c *clientCounts) load() ClientCounts {
	return ClientCounts{
		Requests: c.requests.Load(), RequestErrors: c.requestErrors.Load(), LimitRejects: c.limitRejects.Load(),
		SendWRs: c.sendWRs.Load(), RecvWRs: c.recvWRs.Load(), Completions: c.completions.Load(),
		Doorbells: c.doorbells.Load(), ClientErrors: c.clientErrors.Load(),
		EventsDropped: c.eventsDropped.Load(), EventsSent: c.eventsSent.Load(),
		RegisteredMRs: c.mrs.Load(), RegisteredBytes: c.mrBytes.Load(),
	}
}

// addAll adds o to c.
func (c *clientCounts) addAll(o ClientCounts) {
	c.requests.Add(o.Requests)
	c.requestErrors.Add(o.RequestErrors)
	c.limitRejects.Add(o.LimitRejects)
	c.sendWRs.Add(o.SendWRs)
	c.recvWRs.Add(o.RecvWRs)
	c.completions.Add(o.Completions)
	c.doorbells.Add(o.Doorbells)
	c.clientErrors.Add(o.ClientErrors)
	c.eventsDropped.Add(o.EventsDropped)
	c.eventsSent.Add(o.EventsSent)
	c.mrs.Add(o.RegisteredMRs)
	c.mrBytes.Add(o.RegisteredBytes)
}

// Counts returns the session's counters.
func (s *Session) Counts() ClientCounts { return s.counts.load() }
