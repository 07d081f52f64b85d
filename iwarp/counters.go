package iwarp

import (
	"sync/atomic"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
)

// Counter identifies one of a Stack's counters. Every drop and every
// decision that ends a connection has a counter of its own (nic/README.md,
// principle 4).
type Counter int

// Counters.
const (
	SentFPDUs         Counter = iota // FPDUs written to streams
	RcvdFPDUs                        // FPDUs received and decoded
	SentBytes                        // stream bytes written after the MPA frames
	RcvdBytes                        // stream bytes received after the MPA frames
	WouldBlock                       // writes refused by a full send buffer (backpressure)
	CRCErr                           // FPDUs with a bad MPA CRC
	FramingErr                       // MPA framing lost (ULPDU too long, bad marker)
	TermSent                         // Terminate messages sent
	TermRcvd                         // Terminate messages received
	BadSTag                          // tagged or Read Request STag invalid
	BaseBounds                       // tagged offset or length outside the STag's range
	AccessViolation                  // STag or QP without the needed access right
	STagNotAssociated                // STag of another protection domain or QP
	NoRecvBuf                        // Send with no receive WQE posted
	MSNRange                         // untagged MSN out of range
	BadMO                            // untagged MO not the expected one
	TooLong                          // Send longer than the receive WQE
	IRDExceeded                      // Read/Atomic Requests beyond IRD
	UnexpectedOpcode                 // opcode not valid here (e.g. Read Response with no READ)
	InvalidateErr                    // Send with Invalidate on a key that cannot be invalidated
	LocalProtErr                     // a local SGE failed its check during placement
	ReadRequestsRcvd                 // RDMA Read Requests accepted
	ReadResponsesSent                // Read Response FPDUs sent
	AtomicsRcvd                      // Atomic Requests executed
	RTRSent                          // RTR messages sent
	RTRRcvd                          // RTR messages received
	NoMatchingRTR                    // first FPDU was not the negotiated RTR
	MPARequests                      // MPA Requests sent
	MPAReplies                       // MPA Replies sent (accepts)
	MPARejectsSent                   // MPA Replies with R sent
	MPARejectsRcvd                   // MPA Replies with R received
	MPAInvalid                       // malformed or unacceptable MPA Request or Reply
	MPATimeouts                      // MPA Request or Reply not received in time
	StrictCRCRejects                 // peers refused because their C flag differs (StrictCRC)
	ConnEstablished                  // connections reaching full operation
	ConnFailed                       // connects that failed (refused, timeout, rejected)
	StreamLost                       // streams closed or reset under a live QP
	DroppedInError                   // FPDUs ignored because the QP is in ERR
	CQOverflow                       // a completion could not be queued
	ImmediateRcvd                    // Immediate Data messages completed (RFC 7306)
	NumCounters
)

var counterNames = [NumCounters]string{
	"sent_fpdus", "rcvd_fpdus", "sent_bytes", "rcvd_bytes", "would_block",
	"mpa_crc_err", "mpa_framing_err", "term_sent", "term_rcvd", "bad_stag",
	"base_bounds", "access_violation", "stag_not_associated", "no_recv_buf", "msn_range",
	"bad_mo", "too_long", "ird_exceeded", "unexpected_opcode", "invalidate_err",
	"local_prot_err", "read_requests_rcvd", "read_responses_sent", "atomics_rcvd", "rtr_sent",
	"rtr_rcvd", "no_matching_rtr", "mpa_requests", "mpa_replies", "mpa_rejects_sent",
	"mpa_rejects_rcvd", "mpa_invalid", "mpa_timeouts", "strict_crc_rejects", "conn_established",
	"conn_failed", "stream_lost", "dropped_in_error", "cq_overflow", "immediate_rcvd",
}

func (c Counter) String() string { return counterNames[c] }

// Counters holds a Stack's counters, plus one per wire decode error.
type Counters struct {
	c    [NumCounters]atomic.Uint64
	wire [wire.NumErrors]atomic.Uint64
}

func (cs *Counters) inc(c Counter)            { cs.c[c].Add(1) }
func (cs *Counters) add(c Counter, n int)     { cs.c[c].Add(uint64(n)) }
func (cs *Counters) incWire(e wire.Error)     { cs.wire[e].Add(1) }
func (cs *Counters) Get(c Counter) uint64     { return cs.c[c].Load() }
func (cs *Counters) Wire(e wire.Error) uint64 { return cs.wire[e].Load() }

// NamedCounter is a counter's name and value (the vocabulary's).
type NamedCounter = verbs.NamedCounter

// Snapshot returns every counter in a fixed order, the wire decode errors
// last (named after the error, e.g. "drop_rdmap_bad_opcode").
func (cs *Counters) Snapshot() []NamedCounter {
	out := make([]NamedCounter, 0, int(NumCounters)+wire.NumErrors)
	for i := Counter(0); i < NumCounters; i++ {
		out = append(out, NamedCounter{Name: i.String(), Value: cs.Get(i)})
	}
	for e := wire.Error(2); int(e) < wire.NumErrors; e++ {
		out = append(out, NamedCounter{Name: "drop_" + e.Counter(), Value: cs.Wire(e)})
	}
	return out
}
