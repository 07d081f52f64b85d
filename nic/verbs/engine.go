package verbs

import "github.com/rnic/rnic/memory"

// The contract between nic, which owns the verbs object model and its rules,
// and a transport engine (RoCEv2 in roce, iWARP in iwarp), which moves the
// bytes. nic validates every verb against IBTA's rules (state transitions,
// required attributes, WR opcodes allowed for the QP type, queue limits)
// before calling the engine; the engine trusts those checks, enforces the
// wire-side rules itself, and owns the QP state from RTS on, because only
// it sees the events (retry exhaustion, remote errors) that move a QP to
// SQE or ERR.

// QPConfig is what an engine needs to create a QP.
type QPConfig struct {
	Type   QPType
	QPN    uint32
	PD     memory.PD
	Memory *memory.Table
	SendCQ CompletionQueue
	RecvCQ CompletionQueue
	// RQ is the QP's receive queue, or the SRQ it is attached to.
	RQ      RecvQueue
	UsesSRQ bool
	Cap     QPCap
	// SigAll: every send WR generates a completion, not only SIGNALED ones.
	SigAll bool
	// PortMTU is the port's active MTU: the path MTU of a UD QP (UD has no
	// PATH_MTU attribute) and the bound nic checks RC/UC path MTUs against.
	PortMTU MTU
	// Event reports an asynchronous event on this QP (QP_FATAL,
	// QP_REQ_ERR, QP_ACCESS_ERR, COMM_EST, SQ_DRAINED, LAST_WQE_REACHED).
	// It must not call back into the engine synchronously.
	Event func(AsyncEvent)
}

// QueryAttr is the part of an engine's Query that every transport shares:
// the attributes last modified, the current state as both State and
// CurState, and the capabilities the QP was created with. The engine adds
// its own (PSNs, negotiated IRD/ORD).
func (c *QPConfig) QueryAttr(modified QPAttr, state QPState) QPAttr {
	modified.State, modified.CurState = state, state
	modified.Cap = c.Cap
	return modified
}

// Engine is one QP inside a transport engine.
type Engine interface {
	// QPN is the queue pair number.
	QPN() uint32
	// State is the current state; it can change on its own (to SQE or
	// ERR) when the engine detects an error.
	State() QPState
	// Modify applies attributes that nic has validated for the transition
	// from cur to attr.State (when mask has AttrState). It fails if the QP
	// is no longer in cur (the engine moved it meanwhile), preferably with
	// an error wrapping ErrInvalidState.
	Modify(cur QPState, attr *QPAttr, mask QPAttrMask) error
	// Query returns the current attributes.
	Query() QPAttr
	// PostSend queues a validated send WR. In ERR the WR completes at once
	// with WR_FLUSH_ERR. wr is nic's own copy, which the engine may keep
	// until the WR retires. The engine enforces Cap.MaxSendWR (only it
	// sees WRs retire) and returns an error wrapping ErrQueueFull beyond it.
	PostSend(wr *SendWR) error
	// RecvPosted tells the engine that receive WQEs were posted, so a
	// responder waiting on an empty queue can advance (and, for RC, so
	// credits can be advertised).
	RecvPosted()
	// Destroy removes the QP from the engine; no completion is generated
	// afterwards.
	Destroy()
}

// Provider creates QPs on one device's transport engine.
type Provider interface {
	CreateQP(cfg *QPConfig) (Engine, error)
}
