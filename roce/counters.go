package roce

import (
	"sync/atomic"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// Counter identifies one of a Stack's counters. Names follow rxe's
// (rdma statistic) where rxe has one, so people who know rxe feel at home;
// every drop has a counter of its own (nic/README.md, principle 4).
type Counter int

// Counters.
const (
	SentPkts           Counter = iota // sent_pkts: every packet sent
	RcvdPkts                          // rcvd_pkts: every RoCEv2 packet accepted for a QP
	DuplicateRequest                  // duplicate_request: responder saw an already executed PSN
	OutOfSequence                     // out_of_sequence: responder saw a PSN beyond the expected one
	RcvdSeqErr                        // rcvd_seq_err: requester got a PSN sequence error NAK
	RcvdRNRErr                        // rcvd_rnr_err: requester got an RNR NAK
	SendRNRErr                        // send_rnr_err: responder sent an RNR NAK
	RetryExceededErr                  // retry_exceeded_err: retry_cnt exhausted
	RNRNakRetryErr                    // rnr_nak_retry_err: rnr_retry exhausted
	CompleterRetryErr                 // completer_retry_err: retries started by the completer
	RetransmitTimeouts                // local ACK timeouts
	RetransmittedPkts                 // packets sent again
	AcksSent                          // ACK packets sent (incl. coalesced ones counted once)
	AcksCoalesced                     // ACK requests answered by a later ACK
	NaksSent                          // NAK packets sent (seq, inv req, access, op)
	NakInvalidRequest                 // responder NAK: invalid request
	NakRemoteAccess                   // responder NAK: remote access error
	NakRemoteOp                       // responder NAK: remote operational error
	BadRKey                           // bad_rkey: rkey did not resolve, wrong PD or stale
	AccessViolation                   // an rkey lacked the right or the range was out of bounds
	MisalignedAtomic                  // atomic on an address not 8-byte aligned
	GhostAck                          // ACK/response for a PSN never sent: ignored
	DuplicateResponse                 // response for an already completed PSN: ignored
	ImpliedNak                        // a response skipped an outstanding READ/atomic
	UnexpectedOpcode                  // opcode not valid for the QP type or message state
	NoQP                              // destination QP does not exist
	QPNotReady                        // packet for a QP not in a receiving state
	AddrMismatch                      // RC/UC packet from an address other than the QP's peer
	BadPKey                           // P_Key other than the default
	IcrcErr                           // icrc_err: invariant CRC mismatch (rxe drops silently)
	ReadResponsesSent                 // RDMA READ response packets sent
	ReadReplays                       // duplicate READs answered from the resource ring
	AtomicReplays                     // duplicate atomics, ATOMIC WRITEs and FLUSHes answered from the resource ring
	ResourceMiss                      // duplicate READ/atomic no longer in the resource ring
	CQOverflow                        // a completion could not be queued
	QKeyViolation                     // UD: Q_Key did not match
	RcvNoBuf                          // UC/UD: no receive WQE, message dropped
	UCDroppedMsgs                     // UC: message dropped (gap, length, access)
	UDTooLong                         // UD: message longer than the receive buffer or the MTU, dropped
	GSIRcvdMADs                       // MADs delivered to the GSI agent on QP1
	GSISentMADs                       // MADs sent from QP1
	BudgetWaits                       // a requester waited for the stack's budget (budget.go)
	TimeoutsDeferred                  // a local ACK timeout not counted: its frames still queued on a lossless link (backlog.go)
	AtomicWrites                      // ATOMIC WRITEs executed by the responder (IBTA 1.5)
	FlushesExecuted                   // FLUSHes executed by the responder (IBTA 1.5)
	NumCounters
)

var counterNames = [NumCounters]string{
	"sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_sequence", "rcvd_seq_err",
	"rcvd_rnr_err", "send_rnr_err", "retry_exceeded_err", "rnr_nak_retry_err", "completer_retry_err",
	"retransmit_timeouts", "retransmitted_pkts", "acks_sent", "acks_coalesced", "naks_sent",
	"nak_invalid_request", "nak_remote_access", "nak_remote_op", "bad_rkey", "access_violation",
	"misaligned_atomic", "ghost_ack", "duplicate_response", "implied_nak", "unexpected_opcode",
	"no_qp", "qp_not_ready", "addr_mismatch", "bad_pkey", "icrc_err",
	"read_responses_sent", "read_replays", "atomic_replays", "resource_miss", "cq_overflow",
	"qkey_violation", "rcv_no_buf", "uc_dropped_msgs", "ud_too_long",
	"gsi_rcvd_mads", "gsi_sent_mads", "budget_waits", "timeouts_deferred",
	"atomic_writes", "flushes",
}

func (c Counter) String() string { return counterNames[c] }

// Counters holds a Stack's counters, plus one per wire decode error.
type Counters struct {
	c    [NumCounters]atomic.Uint64
	wire [wire.NumErrors]atomic.Uint64
}

func (cs *Counters) add(c Counter, n int) { cs.c[c].Add(uint64(n)) }
func (cs *Counters) inc(c Counter)        { cs.c[c].Add(1) }
func (cs *Counters) incWire(e wire.Error) { cs.wire[e].Add(1) }

// Get returns a counter's value.
func (cs *Counters) Get(c Counter) uint64 { return cs.c[c].Load() }

// Wire returns how many frames were dropped for a decode error.
func (cs *Counters) Wire(e wire.Error) uint64 { return cs.wire[e].Load() }

// NamedCounter is a counter's name and value (the vocabulary's).
type NamedCounter = verbs.NamedCounter

// Snapshot returns every counter in a fixed order, the wire decode drops
// last (named after the decode error, e.g. "drop_bad_opcode").
func (cs *Counters) Snapshot() []NamedCounter {
	out := make([]NamedCounter, 0, int(NumCounters)+wire.NumErrors)
	for i := Counter(0); i < NumCounters; i++ {
		out = append(out, NamedCounter{Name: i.String(), Value: cs.Get(i)})
	}
	for e := wire.Error(1); int(e) < wire.NumErrors; e++ {
		if e == wire.ErrBadICRC {
			continue // counted as icrc_err
		}
		out = append(out, NamedCounter{Name: "drop_" + e.Counter(), Value: cs.Wire(e)})
	}
	return out
}
