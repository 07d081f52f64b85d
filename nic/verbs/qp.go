package verbs

import "net/netip"

// QPType is a queue pair's transport service.
type QPType uint8

// QP types (enum ibv_qp_type values).
const (
	QPTypeRC QPType = 2
	QPTypeUC QPType = 3
	QPTypeUD QPType = 4
)

func (t QPType) String() string {
	switch t {
	case QPTypeRC:
		return "RC"
	case QPTypeUC:
		return "UC"
	case QPTypeUD:
		return "UD"
	}
	return "unknown"
}

// QPState is a queue pair's state, IBTA Vol 1 §10.3.1 (enum ibv_qp_state).
type QPState uint8

// QP states.
const (
	QPSReset QPState = iota
	QPSInit
	QPSRTR
	QPSRTS
	QPSSQD
	QPSSQE
	QPSErr
)

func (s QPState) String() string {
	return [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "?"}[min(int(s), 7)]
}

// MTU is a path MTU code (enum ibv_mtu).
type MTU uint8

// Path MTUs.
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes returns the MTU in bytes, or 0 for an invalid code.
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

// MTUFromBytes returns the code for 256, 512, 1024, 2048 or 4096 bytes, or 0.
func MTUFromBytes(n int) MTU {
	for m := MTU256; m <= MTU4096; m++ {
		if m.Bytes() == n {
			return m
		}
	}
	return 0
}

// AddressVector addresses a remote port (struct ibv_ah_attr with a GRH, as
// RoCEv2 always has one). The GID is an IPv6 address; an IPv4 peer has its
// IPv4-mapped GID ::ffff:a.b.c.d.
type AddressVector struct {
	DGID         netip.Addr
	SGIDIndex    uint8
	FlowLabel    uint32
	HopLimit     uint8
	TrafficClass uint8
	SL           uint8
	PortNum      uint8
	// DMAC is the next hop's MAC address. The simulated and TAP modes fill
	// it (neighbour resolution); a zero value means "resolve".
	DMAC [6]byte
	// SrcPort is the UDP source port to use, 0 for the per-QP default.
	SrcPort uint16
}

// QPAttrMask says which QPAttr fields a modify applies (enum ibv_qp_attr_mask).
type QPAttrMask uint32

// Attribute mask bits.
const (
	AttrState            QPAttrMask = 1 << 0
	AttrCurState         QPAttrMask = 1 << 1
	AttrEnSQDAsyncNotify QPAttrMask = 1 << 2
	AttrAccessFlags      QPAttrMask = 1 << 3
	AttrPKeyIndex        QPAttrMask = 1 << 4
	AttrPort             QPAttrMask = 1 << 5
	AttrQKey             QPAttrMask = 1 << 6
	AttrAV               QPAttrMask = 1 << 7
	AttrPathMTU          QPAttrMask = 1 << 8
	AttrTimeout          QPAttrMask = 1 << 9
	AttrRetryCnt         QPAttrMask = 1 << 10
	AttrRNRRetry         QPAttrMask = 1 << 11
	AttrRQPSN            QPAttrMask = 1 << 12
	AttrMaxQPRdAtomic    QPAttrMask = 1 << 13
	AttrAltPath          QPAttrMask = 1 << 14
	AttrMinRNRTimer      QPAttrMask = 1 << 15
	AttrSQPSN            QPAttrMask = 1 << 16
	AttrMaxDestRdAtomic  QPAttrMask = 1 << 17
	AttrPathMigState     QPAttrMask = 1 << 18
	AttrCap              QPAttrMask = 1 << 19
	AttrDestQPN          QPAttrMask = 1 << 20
)

// QPAttr holds queue pair attributes (struct ibv_qp_attr).
type QPAttr struct {
	State           QPState
	CurState        QPState
	PathMTU         MTU
	QKey            uint32
	RQPSN           uint32
	SQPSN           uint32
	DestQPN         uint32
	AccessFlags     Access // remote access the responder allows
	Cap             QPCap
	AV              AddressVector
	PKeyIndex       uint16
	SQDrainNotify   bool
	MaxRdAtomic     uint8 // outstanding READ/atomic requests as requester (ORD)
	MaxDestRdAtomic uint8 // responder resources for READ/atomic (IRD)
	MinRNRTimer     uint8 // RNR timer code the responder puts in RNR NAKs
	PortNum         uint8
	Timeout         uint8 // local ACK timeout: 4.096µs × 2^Timeout, 0 = infinite
	RetryCnt        uint8 // 0..7; 7 is NOT infinite (IBTA; rxe deviates)
	RNRRetry        uint8 // 0..7; 7 means infinite
	PathMigState    MigState
}

// MigState is a QP's path migration state (enum ibv_mig_state).
type MigState uint8

// Path migration states.
const (
	MigMigrated MigState = 0 // IBV_MIG_MIGRATED: no alternate path armed
	MigRearm    MigState = 1 // IBV_MIG_REARM
	MigArmed    MigState = 2 // IBV_MIG_ARMED
)

// QPCap holds queue sizes (struct ibv_qp_cap).
type QPCap struct {
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
}

// Apply copies into a the attributes of src that mask selects and that a
// QP keeps as given, for Query to return: not the state (the engine's),
// the capabilities (fixed at creation) or the PSNs (the engine's
// counters, which Query reads).
func (a *QPAttr) Apply(src *QPAttr, mask QPAttrMask) {
	for _, f := range appliedAttrs {
		if mask&f.bit != 0 {
			f.copy(a, src)
		}
	}
}

// appliedAttrs are the attributes Apply copies, each with its mask bit.
var appliedAttrs = [...]struct {
	bit  QPAttrMask
	copy func(dst, src *QPAttr)
}{
	{AttrAccessFlags, func(d, s *QPAttr) { d.AccessFlags = s.AccessFlags }},
	{AttrPKeyIndex, func(d, s *QPAttr) { d.PKeyIndex = s.PKeyIndex }},
	{AttrPort, func(d, s *QPAttr) { d.PortNum = s.PortNum }},
	{AttrQKey, func(d, s *QPAttr) { d.QKey = s.QKey }},
	{AttrAV, func(d, s *QPAttr) { d.AV = s.AV }},
	{AttrPathMTU, func(d, s *QPAttr) { d.PathMTU = s.PathMTU }},
	{AttrTimeout, func(d, s *QPAttr) { d.Timeout = s.Timeout }},
	{AttrRetryCnt, func(d, s *QPAttr) { d.RetryCnt = s.RetryCnt }},
	{AttrRNRRetry, func(d, s *QPAttr) { d.RNRRetry = s.RNRRetry }},
	{AttrMinRNRTimer, func(d, s *QPAttr) { d.MinRNRTimer = s.MinRNRTimer }},
	{AttrMaxQPRdAtomic, func(d, s *QPAttr) { d.MaxRdAtomic = s.MaxRdAtomic }},
	{AttrMaxDestRdAtomic, func(d, s *QPAttr) { d.MaxDestRdAtomic = s.MaxDestRdAtomic }},
	{AttrDestQPN, func(d, s *QPAttr) { d.DestQPN = s.DestQPN }},
	{AttrEnSQDAsyncNotify, func(d, s *QPAttr) { d.SQDrainNotify = s.SQDrainNotify }},
	{AttrPathMigState, func(d, s *QPAttr) { d.PathMigState = s.PathMigState }},
}
