package verbs

// The interfaces an engine uses to reach the objects a QP is attached to.
// nic implements them; engines never see nic's concrete types, so the RoCE
// and iWARP engines can share one object model.

// RecvQueue is where a responder takes receive WQEs from: the QP's own
// receive queue or a shared receive queue.
type RecvQueue interface {
	// Pop removes and returns the oldest receive WQE. ok is false when the
	// queue is empty (the responder answers with an RNR NAK).
	Pop() (wr RecvWR, ok bool)
	// PopFit removes and returns the oldest receive WQE only if its
	// buffers hold at least n bytes: ok is false when the queue is empty,
	// fits false when the oldest WQE is smaller, which then stays queued.
	// A datagram service uses it to drop a message too long for the
	// receive buffer without consuming the WQE (IBTA class D), atomically
	// even on a shared receive queue.
	PopFit(n uint64) (wr RecvWR, ok, fits bool)
	// Len is the number of posted WQEs, used to compute AETH credits.
	Len() int
}

// CompletionQueue receives completions.
type CompletionQueue interface {
	// Push adds a completion. It returns false if the CQ had no room: the
	// completion is lost (IBV_EVENT_CQ_ERR). As on Linux rxe, a lost send
	// completion leaves the QP as it is, a lost receive completion puts
	// it into ERR.
	Push(wc *WC) bool
	// Solicited marks that a completion with the solicited event flag
	// arrived, for CQs armed for solicited events only.
	Solicited()
}

// DefaultEventQueueLen is how many asynchronous events a device holds for
// a program that has not read them yet, unless configured otherwise.
const DefaultEventQueueLen = 1024

// AsyncEvent is an asynchronous event type (enum ibv_event_type).
type AsyncEvent uint8

// Async events.
const (
	EventCQErr            AsyncEvent = 0
	EventQPFatal          AsyncEvent = 1
	EventQPReqErr         AsyncEvent = 2
	EventQPAccessErr      AsyncEvent = 3
	EventCommEst          AsyncEvent = 4
	EventSQDrained        AsyncEvent = 5
	EventPortActive       AsyncEvent = 9
	EventPortErr          AsyncEvent = 10
	EventSRQErr           AsyncEvent = 14
	EventSRQLimitReached  AsyncEvent = 15
	EventQPLastWQEReached AsyncEvent = 16
)

// Affiliated reports whether events of type e concern a QP, CQ or SRQ
// (the element libibverbs hands out is then that object, chosen by the
// type); the others concern a port or the device. ibv_event_type 6 and 7
// are the path-migration events, QP events too.
func (e AsyncEvent) Affiliated() bool {
	switch e {
	case EventCQErr, EventQPFatal, EventQPReqErr, EventQPAccessErr, EventCommEst, EventSQDrained, 6, 7,
		EventSRQErr, EventSRQLimitReached, EventQPLastWQEReached:
		return true
	}
	return false
}

func (e AsyncEvent) String() string {
	switch e {
	case EventCQErr:
		return "CQ_ERR"
	case EventQPFatal:
		return "QP_FATAL"
	case EventQPReqErr:
		return "QP_REQ_ERR"
	case EventQPAccessErr:
		return "QP_ACCESS_ERR"
	case EventCommEst:
		return "COMM_EST"
	case EventSQDrained:
		return "SQ_DRAINED"
	case EventPortActive:
		return "PORT_ACTIVE"
	case EventPortErr:
		return "PORT_ERR"
	case EventSRQErr:
		return "SRQ_ERR"
	case EventSRQLimitReached:
		return "SRQ_LIMIT_REACHED"
	case EventQPLastWQEReached:
		return "QP_LAST_WQE_REACHED"
	}
	return "UNKNOWN_EVENT"
}
