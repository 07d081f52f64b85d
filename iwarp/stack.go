package iwarp

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream"
)

// RTRMode says which Ready-to-Receive messages (RFC 6581 §9.2) an endpoint
// offers (initiator) or accepts (responder).
type RTRMode uint8

// RTR modes. The default offers the zero-length RDMA Write and Read, as
// siw does (neither siw nor i40iw offers a Send-type RTR, and siw does
// not accept one), and accepts all three. A responder picks, among the
// kinds offered that it accepts, Write, else Read, else Send.
//
// The Send-type RTR (flag B) is a zero-length Send on untagged queue 0
// carrying the initiator's first queue-0 MSN. The RTR belongs to the
// connection setup, not to the ULP: the responder consumes no receive WQE
// for it and completes nothing, but counts it in its queue-0 MSN
// accounting, so the initiator's first real Send (or Immediate Data)
// carries MSN 2.
const (
	RTRAuto  RTRMode = iota // offers Write and Read; accepts Write, Read and Send
	RTRWrite                // zero-length RDMA Write only
	RTRRead                 // zero-length RDMA Read only
	RTRNone                 // no peer-to-peer mode: the A flag is not set
	RTRSend                 // zero-length Send only
	RTRAny                  // offers and accepts Write, Read and Send
)

// offers reports whether an initiator in mode m offers RTR kind k.
func (m RTRMode) offers(k rtrKind) bool {
	switch m {
	case RTRAuto:
		return k == rtrWrite || k == rtrRead
	case RTRAny:
		return k != rtrNone
	}
	return m.only() == k
}

// accepts reports whether a responder in mode m accepts RTR kind k.
func (m RTRMode) accepts(k rtrKind) bool {
	if m == RTRAuto || m == RTRAny {
		return k != rtrNone
	}
	return m.only() == k
}

// only is the single kind of a one-kind mode.
func (m RTRMode) only() rtrKind {
	switch m {
	case RTRWrite:
		return rtrWrite
	case RTRRead:
		return rtrRead
	case RTRSend:
		return rtrSend
	}
	return rtrNone
}

// Config configures a Stack.
type Config struct {
	// Clock drives every timer; the virtual clock makes runs deterministic.
	Clock clock.Clock
	// Network opens and accepts the byte streams: &kerneltcp.Network{} for
	// kernel sockets, a *simstream.Network on the virtual clock.
	Network stream.Network
	// Addr is the local address connections are dialed from; the zero
	// Addr lets the network choose.
	Addr netip.Addr
	// Tee, if set, wraps every connection right after it is opened or
	// accepted, before anything is read or written: the place for a pcap
	// tee (streamcap.TeeConnWith with NewCaptureFramer).
	Tee func(stream.Conn) stream.Conn

	// MPA options.
	//
	// NoCRC: do not ask for CRCs (C=0). CRCs are still used when the peer
	// asks (RFC 5044 §7.1.1: "CRC MUST be used if peer requests it").
	NoCRC bool
	// StrictCRC refuses a peer whose C flag differs from ours (siw's
	// mpa_crc_strict): with CRCs requested, a peer that does not set C;
	// with NoCRC, a peer that does.
	StrictCRC bool
	// MPARev is the revision sent: 2 (default, RFC 6581, with IRD/ORD) or 1
	// (RFC 5044). Peers of either revision are accepted; a responder
	// answers with the lower of the two.
	MPARev uint8
	// RTR selects the Ready-to-Receive messages offered and accepted.
	RTR RTRMode
	// Markers asks the peer for MPA markers in what it sends (M=1). Off by
	// default (siw never asks); markers a peer asks for are always sent.
	Markers bool
	// ConnectTimeout bounds the wait for the MPA Reply (siw: 10 s);
	// AcceptTimeout the wait for the MPA Request after a connection was
	// accepted (siw: 5 s).
	ConnectTimeout time.Duration
	AcceptTimeout  time.Duration
	// CloseTimeout bounds how long a closed connection waits for the
	// peer's FIN before it is reset (default 5 s).
	CloseTimeout time.Duration

	// MSS sizes FPDUs: each one fits an MSS-byte TCP segment when created
	// (RFC 5044 §4.5). Default 1460; larger values suit loopback.
	MSS int
	// MaxRecvULPDU is the largest ULPDU accepted (default and at most
	// 65535); a larger ULPDU_Length is a framing error.
	MaxRecvULPDU int
	// NoAtomics refuses atomic WRs at post time and answers Atomic
	// Requests with a Terminate (unexpected opcode), as a peer without
	// RFC 7306 would.
	NoAtomics bool
	// NoImmediate refuses SEND_WITH_IMM and RDMA_WRITE_WITH_IMM at post
	// time and answers Immediate Data messages with a Terminate
	// (unexpected opcode), as a peer without RFC 7306 would.
	NoImmediate bool

	// Trace, if set, receives every state change and protocol decision.
	Trace func(TraceEvent)
	// OnConnEvent, if set, is called when a QP's connection is
	// established or ends. It runs without engine locks held and may call
	// into the Stack.
	OnConnEvent func(ConnEvent)
}

// Defaults.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultAcceptTimeout  = 5 * time.Second
	DefaultCloseTimeout   = 5 * time.Second
	DefaultMSS            = 1460
	// MaxPrivateData is the largest ULP private data in an MPA frame:
	// RFC 5044's 512 less the RFC 6581 IRD/ORD words.
	MaxPrivateData = wire.MPAMaxPrivate - wire.MPAEnhancedLen
	// MaxIRDORD is the largest IRD or ORD value (14 bits).
	MaxIRDORD = wire.IRDORDMask
)

// unsupported is ErrUnsupported: it reads as iWARP's and is
// verbs.ErrNotSupported.
type unsupported struct{}

func (unsupported) Error() string { return "iwarp: unsupported" }
func (unsupported) Unwrap() error { return verbs.ErrNotSupported }

// Stack is one device's iWARP engine and connection manager.
type Stack struct {
	cfg Config
	ctr Counters

	mu        sync.Mutex
	qps       map[uint32]*QP
	listeners map[*Listener]struct{}
	pending   map[*cep]struct{} // accepted streams not bound to a QP yet
	closed    bool

	// maxULPDU is the largest ULPDU we send; with markers less (per QP).
	maxULPDU int
}

// Errors.
var (
	// ErrUnsupported: a QP type or operation iWARP does not have; it is
	// verbs.ErrNotSupported (EOPNOTSUPP through the verbs API).
	ErrUnsupported error = unsupported{}
	// ErrNotConnected: the operation needs an established connection.
	ErrNotConnected = fmt.Errorf("iwarp: QP not connected: %w", verbs.ErrInvalidState)
	// ErrStateChanged: Modify found the QP in another state than nic saw.
	ErrStateChanged = fmt.Errorf("iwarp: QP state changed: %w", verbs.ErrInvalidState)
	// ErrRejected: the peer rejected the connection (MPA Reply with R);
	// ConnectResult.PrivateData holds its private data.
	ErrRejected = errors.New("iwarp: connection rejected by peer")
	// ErrMPATimeout: the MPA Reply (or Request) did not arrive in time.
	ErrMPATimeout = errors.New("iwarp: MPA negotiation timed out")
	// ErrMPAInvalid: the peer's MPA frame was malformed or unacceptable
	// (markers, CRC policy, revision, RTR).
	ErrMPAInvalid = errors.New("iwarp: invalid MPA negotiation")
	// ErrStackClosed: the Stack was closed.
	ErrStackClosed = errors.New("iwarp: stack closed")
	// ErrBusy: the QP already has a connection or a connection attempt.
	ErrBusy = fmt.Errorf("iwarp: QP already connecting or connected: %w", verbs.ErrInvalidState)
)

// NewStack creates a stack.
func NewStack(cfg Config) (*Stack, error) {
	if cfg.Clock == nil || cfg.Network == nil {
		return nil, fmt.Errorf("iwarp: NewStack needs a Clock and a Network")
	}
	switch cfg.MPARev {
	case 0:
		cfg.MPARev = wire.MPARev2
	case wire.MPARev1, wire.MPARev2:
	default:
		return nil, fmt.Errorf("iwarp: MPA revision %d: only 1 and 2 exist", cfg.MPARev)
	}
	if cfg.RTR > RTRAny {
		return nil, fmt.Errorf("iwarp: invalid RTR mode %d", cfg.RTR)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.AcceptTimeout <= 0 {
		cfg.AcceptTimeout = DefaultAcceptTimeout
	}
	if cfg.CloseTimeout <= 0 {
		cfg.CloseTimeout = DefaultCloseTimeout
	}
	if cfg.MSS <= 0 {
		cfg.MSS = DefaultMSS
	}
	if cfg.MSS < minMSS {
		return nil, fmt.Errorf("iwarp: MSS %d too small", cfg.MSS)
	}
	if cfg.MaxRecvULPDU <= 0 || cfg.MaxRecvULPDU > wire.MaxULPDU {
		cfg.MaxRecvULPDU = wire.MaxULPDU
	}
	s := &Stack{cfg: cfg, qps: map[uint32]*QP{}, listeners: map[*Listener]struct{}{}, pending: map[*cep]struct{}{}}
	s.maxULPDU = ulpduFor(cfg.MSS, false)
	return s, nil
}

// minMSS is the smallest MSS FPDUs are sized for.
const minMSS = 64

// ulpduFor is the largest ULPDU whose FPDU fits an mss-byte segment: the
// length field, the ULPDU and its pad, the CRC, and with markers one marker
// per 512 octets the FPDU may span.
func ulpduFor(mss int, markers bool) int {
	room := mss - wire.CRCLen
	if markers {
		room -= wire.MarkerLen * ((mss+wire.MarkerInterval-1)/wire.MarkerInterval + 1)
	}
	n := room&^3 - wire.LengthFieldLen
	return min(n, wire.MaxULPDUMarkers)
}

// Counters returns the stack's counters.
func (s *Stack) Counters() *Counters { return &s.ctr }

// Clock returns the stack's clock.
func (s *Stack) Clock() clock.Clock { return s.cfg.Clock }

// CreateQP implements verbs.Provider. Only RC QPs exist in iWARP.
func (s *Stack) CreateQP(cfg *verbs.QPConfig) (verbs.Engine, error) {
	if cfg.Type != verbs.QPTypeRC {
		return nil, fmt.Errorf("%w: %v QPs (iWARP is RC only)", ErrUnsupported, cfg.Type)
	}
	if cfg.QPN == 0 || cfg.Memory == nil || cfg.SendCQ == nil || cfg.RecvCQ == nil || cfg.RQ == nil {
		return nil, fmt.Errorf("iwarp: incomplete QP config")
	}
	qp := newQP(s, cfg)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrStackClosed
	}
	if _, dup := s.qps[cfg.QPN]; dup {
		return nil, fmt.Errorf("iwarp: QPN %#x in use", cfg.QPN)
	}
	s.qps[cfg.QPN] = qp
	return qp, nil
}

func (s *Stack) removeQP(qpn uint32) {
	s.mu.Lock()
	delete(s.qps, qpn)
	s.mu.Unlock()
}

func (s *Stack) lookup(qpn uint32) *QP {
	s.mu.Lock()
	qp := s.qps[qpn]
	s.mu.Unlock()
	return qp
}

// QP returns the engine of a QP created on the stack, or nil.
func (s *Stack) QP(qpn uint32) *QP { return s.lookup(qpn) }

// Close stops the stack: listeners close, pending connection requests and
// every QP's connection are reset (the QPs go to ERR). It goes through them
// in a fixed order (by address, by QPN), not the maps' random one, so a
// simulated run's trace and capture end the same way every time.
func (s *Stack) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	ls := slices.SortedFunc(maps.Keys(s.listeners), func(a, b *Listener) int { return a.Addr().Compare(b.Addr()) })
	ceps := slices.SortedFunc(maps.Keys(s.pending), func(a, b *cep) int {
		return a.conn.RemoteAddr().Compare(b.conn.RemoteAddr())
	})
	qps := slices.SortedFunc(maps.Values(s.qps), func(a, b *QP) int { return cmp.Compare(a.Cfg.QPN, b.Cfg.QPN) })
	s.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	for _, c := range ceps {
		c.abort(ErrStackClosed)
	}
	for _, qp := range qps {
		qp.Mu.Lock()
		if qp.conn != nil {
			qp.teardown(ErrStackClosed, true)
		}
		qp.unlock()
	}
}
