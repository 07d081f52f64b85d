package roce

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
)

// Config configures a Stack.
type Config struct {
	// Link carries the device's Ethernet frames.
	Link transport.Endpoint
	// Clock drives every timer; the virtual clock makes runs deterministic.
	Clock clock.Clock
	// MAC is the device's own address.
	MAC [6]byte
	// Addrs are the device's IP addresses, in GID table order (an IPv4
	// address is GID ::ffff:a.b.c.d).
	Addrs []netip.Addr
	// UDPPort is the RoCEv2 port; 0 means 4791.
	UDPPort uint16
	// Resolve maps a peer IP to its MAC when an address vector carries no
	// DMAC; nil, or a miss, sends to the broadcast address.
	Resolve func(netip.Addr) ([6]byte, bool)
	// PeerPort gives the RoCEv2 UDP port a peer listens on, when it is not
	// UDPPort: in the embedded mode two NICs may share an address (IPv6
	// loopback has only ::1) and differ by port. nil means UDPPort.
	PeerPort func(netip.Addr) uint16
	// Window bounds the unacknowledged PSNs of a QP (default 128, rxe's).
	Window int
	// AckEvery makes the requester ask for an ACK at least every N packets
	// of a long message (default 64: rxe asks one in every 65).
	AckEvery int
	// Trace, if set, receives every state change and PSN/ACK/NAK decision.
	Trace func(TraceEvent)
	// DeferAcks coalesces ACKs across frames delivered one by one: the
	// ACKs requested by every frame that arrives at the same instant are
	// answered by one ACK per QP once the clock has run all the events due
	// then (on the virtual clock, a burst arriving together). Without it,
	// ACKs are coalesced within each InputBatch (and Input sends them at
	// once), which suits links that read frames in batches and keeps
	// latency at its minimum.
	DeferAcks bool
	// FixedWindow keeps every QP's window at Window whatever is lost
	// (window.go), for a link whose losses are injected faults, not
	// congestion: the simulated link at 10% loss took five times the
	// virtual time with the window halved at each of them.
	FixedWindow bool
	// Budget bounds the bytes of unacknowledged packets (a path MTU each)
	// all RC requesters of the stack keep together (budget.go). 0 sizes
	// it from the link's receive buffer when the link has one
	// (transport.RecvBufferSizer: the embedded mode's socket) and leaves
	// it off on other links (the simulated one); negative turns it off.
	Budget int
	// SourcePorts, if set, is told which UDP source ports QPs send from
	// while they live (the link keeps a socket per port); nil when the
	// link keeps nothing per port.
	SourcePorts transport.SourcePorts
	// Groups, if set, joins and leaves the IP multicast groups QPs attach
	// to (mcast.go); nil means the link's own, if it is a
	// transport.GroupMember (a wrapper, a capture tee, hides it).
	Groups transport.GroupMember
}

// Stack is one device's RoCEv2 engine on one link.
type Stack struct {
	cfg Config
	ctr Counters
	// sender is the link's batch interface, nil if it has none: QPs then
	// send frame by frame.
	sender transport.BatchSender
	// bursts lends QPs the buffers their bursts are built in (burst.go).
	bursts burstPool

	mu  sync.RWMutex
	qps map[uint32]*QP

	// Multicast groups (mcast.go): changed under mcastMu, read without.
	mcastMu sync.Mutex
	mcast   atomic.Pointer[mcastGroups]

	// ACK coalescing: QPs with an ACK due, flushed after a batch.
	ackMu        sync.Mutex
	ackDirty     []*QP
	ackScheduled bool
	ackTimer     clock.Timer
	flushMu      sync.Mutex
	ackWork      []*QP

	// inputMu is held shared by every receive call and exclusively by
	// Close, which so waits for receives in progress.
	inputMu sync.RWMutex
	closed  bool

	// gsi is QP1, the management datagram QP (gsi.go).
	gsi gsi

	// budget is shared by the RC requesters (budget.go).
	budget budget

	// backlog is the link's, if it can tell a queued frame from a lost
	// one (backlog.go).
	backlog transport.Backlogger
}

// ErrUnsupported is returned for QP types the engine does not implement.
var ErrUnsupported = errors.New("roce: unsupported")

// NewStack creates a stack and attaches it to cfg.Link.
func NewStack(cfg Config) (*Stack, error) {
	if cfg.Link == nil || cfg.Clock == nil {
		return nil, fmt.Errorf("roce: NewStack needs a Link and a Clock")
	}
	if len(cfg.Addrs) == 0 {
		return nil, fmt.Errorf("roce: NewStack needs at least one address")
	}
	if cfg.UDPPort == 0 {
		cfg.UDPPort = wire.UDPPort
	}
	if cfg.Window <= 0 {
		cfg.Window = 128
	}
	if cfg.Window > 1<<22 {
		return nil, fmt.Errorf("roce: window %d exceeds the PSN space's safe half", cfg.Window)
	}
	if cfg.AckEvery <= 0 {
		cfg.AckEvery = 64
	}
	if cfg.Groups == nil {
		cfg.Groups, _ = cfg.Link.(transport.GroupMember)
	}
	s := &Stack{cfg: cfg, qps: make(map[uint32]*QP)}
	s.budget.limit = int64(cfg.Budget)
	if cfg.Budget == 0 {
		s.budget.limit = defaultBudget(cfg.Link)
	}
	if s.budget.limit < 0 {
		s.budget.limit = 0
	} else if s.budget.limit > 0 {
		s.budget.limit = max(s.budget.limit, minBudget)
	}
	if cfg.SourcePorts != nil {
		cfg.SourcePorts.HoldSourcePort(SourcePort(GSIQPN)) // QP1 lives as long as the stack
	}
	s.sender, _ = cfg.Link.(transport.BatchSender)
	s.backlog = backlogOf(cfg.Link)
	if be, ok := cfg.Link.(transport.BatchEndpoint); ok {
		be.SetBatchReceiver(s.InputBatch)
	} else {
		cfg.Link.SetReceiver(s.Input)
	}
	return s, nil
}

// Input processes one frame from the link (the link's receive hook); the
// frame is only read during the call.
func (s *Stack) Input(frame []byte) {
	s.inputMu.RLock()
	defer s.inputMu.RUnlock()
	if s.closed {
		return
	}
	s.input(frame)
	if !s.cfg.DeferAcks {
		s.flushAcks()
	}
	if s.budget.pending.Load() {
		s.wakeBudget()
	}
}

// InputBatch processes frames that arrived together and then sends one
// coalesced ACK per QP that owes one.
func (s *Stack) InputBatch(frames [][]byte) {
	s.inputMu.RLock()
	defer s.inputMu.RUnlock()
	if s.closed {
		return
	}
	for _, f := range frames {
		s.input(f)
	}
	if s.acksOwed() {
		// A consumer this batch woke (a landed WRITE, a receive
		// completion) runs now, before the ACKs' syscall: on a free core
		// it answers while this goroutine sends them, and a request it
		// posts carries its QP's ACK in the same sendmmsg
		// (requester.postProgress). A ping-pong's round trip thus waits
		// for neither.
		runtime.Gosched()
	}
	s.flushAcks()
	if s.budget.pending.Load() {
		s.wakeBudget() // the batch's ACKs freed budget blocked QPs wait for
	}
}

// acksOwed reports whether some QP owes an ACK.
func (s *Stack) acksOwed() bool {
	s.ackMu.Lock()
	defer s.ackMu.Unlock()
	return len(s.ackDirty) > 0
}

// Close stops the stack before its link closes: it waits for receives in
// progress, sends the ACKs they owe (an application may already have seen
// the receive completions, and closing right away must not leave the peer
// retrying), and ignores every frame after. It does not close the link.
func (s *Stack) Close() {
	s.inputMu.Lock()
	s.closed = true
	s.inputMu.Unlock()
	s.flushAcks()
}

// ackDue records that qp owes an ACK (called with qp.Mu held).
func (s *Stack) ackDue(qp *QP) {
	s.ackMu.Lock()
	s.ackDirty = append(s.ackDirty, qp)
	if s.cfg.DeferAcks && !s.ackScheduled {
		s.ackScheduled = true
		if s.ackTimer == nil {
			s.ackTimer = s.cfg.Clock.AfterFunc(0, s.flushAcks)
		} else {
			s.ackTimer.Reset(0)
		}
	}
	s.ackMu.Unlock()
}

// flushAcks sends the coalesced ACKs.
func (s *Stack) flushAcks() {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.ackMu.Lock()
	s.ackWork, s.ackDirty = s.ackDirty, s.ackWork[:0]
	s.ackScheduled = false
	s.ackMu.Unlock()
	for i, qp := range s.ackWork {
		qp.Mu.Lock()
		qp.ackQueued = false
		qp.resp.flushAck()
		qp.Mu.Unlock()
		s.ackWork[i] = nil
	}
}

// Counters returns the stack's counters.
func (s *Stack) Counters() *Counters { return &s.ctr }

// Clock returns the stack's clock.
func (s *Stack) Clock() clock.Clock { return s.cfg.Clock }

// CreateQP implements verbs.Provider.
func (s *Stack) CreateQP(cfg *verbs.QPConfig) (verbs.Engine, error) {
	switch cfg.Type {
	case verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD:
	default:
		return nil, fmt.Errorf("%w: %v QPs", ErrUnsupported, cfg.Type)
	}
	if cfg.QPN == 0 || cfg.QPN > wire.PSNMask || cfg.Memory == nil || cfg.SendCQ == nil || cfg.RecvCQ == nil || cfg.RQ == nil {
		return nil, fmt.Errorf("roce: incomplete QP config")
	}
	qp := newQP(s, cfg)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.qps[cfg.QPN]; dup {
		return nil, fmt.Errorf("roce: QPN %#x in use", cfg.QPN)
	}
	s.qps[cfg.QPN] = qp
	qp.holdPort(SourcePort(cfg.QPN))
	return qp, nil
}

func (s *Stack) removeQP(qpn uint32) {
	s.mu.Lock()
	delete(s.qps, qpn)
	s.mu.Unlock()
}

func (s *Stack) lookup(qpn uint32) *QP {
	s.mu.RLock()
	qp := s.qps[qpn]
	s.mu.RUnlock()
	return qp
}

// isLocal reports whether a is one of the device's addresses.
func (s *Stack) isLocal(a netip.Addr) bool {
	a = a.Unmap()
	for _, l := range s.cfg.Addrs {
		if l.Unmap() == a {
			return true
		}
	}
	return false
}

// input is the link's receive hook: decode, verify, dispatch. The frame is
// only valid during the call.
func (s *Stack) input(frame []byte) {
	var f wire.Frame
	if err := f.Decode(frame, s.cfg.UDPPort); err != nil {
		we, _ := err.(wire.Error)
		if we != 0 && we != wire.ErrNotIP && we != wire.ErrNotUDP && we != wire.ErrNotRoCEPort {
			// Not-for-us traffic (ARP, TCP, other UDP) is not a RoCE drop.
			s.ctr.incWire(we)
		}
		return
	}
	if !f.VerifyICRC() {
		s.ctr.inc(IcrcErr)
		return
	}
	if f.DstAddr().Unmap().IsMulticast() {
		s.mcastInput(&f)
		return
	}
	if !s.isLocal(f.DstAddr()) {
		s.ctr.incWire(wire.ErrBadIPHeader)
		return
	}
	bth := f.Packet.BTH()
	if !pkeyMatch(bth.PKey(), wire.DefaultPKey) {
		s.ctr.inc(BadPKey)
		return
	}
	if bth.Opcode() == wire.CNP {
		return // congestion control is not implemented; a CNP is harmless
	}
	if bth.DestQP() == GSIQPN {
		s.gsiInput(&f)
		return
	}
	qp := s.lookup(bth.DestQP())
	if qp == nil {
		s.ctr.inc(NoQP)
		return
	}
	qp.receive(&f)
}

// pkeyMatch is the IBTA's P_Key match (§10.9.3, as rxe's pkey_match): the
// 15-bit keys are equal and not zero, and at least one side is a full
// member (bit 15). The port's one key is the full default 0xFFFF, so the
// limited default 0x7FFF matches it too.
func pkeyMatch(pkt, port uint16) bool {
	const key, full = 0x7FFF, 0x8000
	return pkt&key != 0 && pkt&key == port&key && (pkt|port)&full != 0
}
