// Device attributes (ibv_query_device) and the limits behind them. Every
// number reported here is one nic enforces: a create or post that exceeds it
// fails, and a test checks each one. Defaults follow Linux rxe's
// rxe_param.h (DEFAULT_MAX_VALUE = 2^20 for object counts), except where
// rnic enforces something different, which is noted.

package nic

import (
	"math"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// defaultCaps are the capabilities of a RoCE device, rxe's and CURR_QP_STATE_MOD:
// nic implements each itself except three the RoCE engine does: RNR NAK
// generation, the bad P_Key and Q_Key counters it keeps and AsIBV's QueryPort
// reads (BAD_PKEY_CNTR, BAD_QKEY_CNTR), and LOCAL_INV and SEND_WITH_INV
// (MEM_MGT_EXTENSIONS). AUTO_PATH_MIG is what rxe offers on RoCE: the path
// migration state kept, an alternate path refused as Linux refuses it there.
// Not PORT_ACTIVE_EVENT: a port is ACTIVE unless its NIC has a link that
// goes down and up and calls SetPortActive (the TAP mode, rnicd's UDP NICs),
// which adds the flag. Memory windows, types 1 and 2B, are nic's and the engines' (binds
// run in send-queue order). An iWARP device overrides Limits.DeviceCap.
const defaultCaps = verbs.DeviceBadPKeyCntr | verbs.DeviceBadQKeyCntr | verbs.DeviceAutoPathMig |
	verbs.DeviceChangePhyPort | verbs.DeviceUDAVPortEnforce | verbs.DeviceCurrQPStateMod |
	verbs.DeviceSysImageGUID | verbs.DeviceRCRNRNAKGen |
	verbs.DeviceSRQResize | verbs.DeviceMemMgtExtensions |
	verbs.DeviceMemWindow | verbs.DeviceMemWindowType2B

// Identification values reported by Query.
const (
	// VendorID is 0xFFFFFF, "no IEEE OUI", the value Linux rxe reports:
	// rdma-core's test suite keys its software-device rules (no XRC, no
	// device memory) on it, and those rules fit rnic too.
	VendorID = 0xFFFFFF
	// VendorPartID tells rnic from rxe among devices with VendorID ("RN").
	VendorPartID = 0x524E
	// FirmwareVersion is the fw_ver string.
	FirmwareVersion = "rnic 0.1"
	// PageSizeCap is page_size_cap: any power of two from 4 KiB to 2 GiB,
	// rxe's value (MRs are byte-granular here, so no size is refused).
	PageSizeCap = 0xFFFFF000
	// LocalCAAckDelay is rxe's local_ca_ack_delay.
	LocalCAAckDelay = 15
	// maxQPN is the largest QPN a QP can get: 0xFFFFFF is the multicast QPN.
	maxQPN = 1<<24 - 2
)

// Limits override the device's default limits. A zero field keeps the
// default; see DefaultLimits for the values.
type Limits struct {
	MaxQP           int    // queue pairs
	MaxQPWR         int    // max_send_wr and max_recv_wr of one QP
	MaxSGE          int    // max_send_sge and max_recv_sge of one QP
	MaxSGERd        int    // SGEs of an RDMA READ (≤ MaxSGE)
	MaxInlineData   int    // inline bytes of one send WR
	MaxCQ           int    // completion queues
	MaxCQE          int    // entries of one CQ
	MaxMR           int    // memory regions (the memory.Table limit)
	MaxMRSize       uint64 // bytes of one MR (the memory.Table limit)
	MaxMW           int    // memory windows (the memory.Table limit)
	MaxPD           int    // protection domains
	MaxAH           int    // address handles
	MaxQPRdAtom     int    // max_dest_rd_atomic of one QP (responder resources)
	MaxQPInitRdAtom int    // max_rd_atomic of one QP (initiator depth)
	MaxResRdAtom    int    // sum of max_dest_rd_atomic over all QPs
	MaxSRQ          int    // shared receive queues
	MaxSRQWR        int    // WRs of one SRQ
	MaxSRQSGE       int    // SGEs of one SRQ WR
	// NoAtomics reports AtomicNone and refuses atomic WRs and the
	// RemoteAtomic QP access flag (an iWARP device without RFC 7306).
	NoAtomics bool
	// DeviceCap replaces the default capability flags when non-zero.
	DeviceCap verbs.DeviceCap
}

// DefaultMaxMW is the default max_mw: Linux rxe's (RXE_MAX_MW, 2^19 - 1).
const DefaultMaxMW = 1<<19 - 1

// DefaultLimits returns the defaults: rxe's, except max_mr_size (the
// memory.Table limit, 1 TiB, where rxe reports 2^64−1) and max_srq_sge,
// which is rxe's 27.
func DefaultLimits() Limits {
	const def = 1 << 20 // rxe DEFAULT_MAX_VALUE
	return Limits{
		MaxQP:           def,
		MaxQPWR:         def,
		MaxSGE:          32,
		MaxSGERd:        32,
		MaxInlineData:   512, // rxe: 32 SGEs × 16 bytes of WQE space
		MaxCQ:           def,
		MaxCQE:          1<<15 - 1, // rxe: (1 << RXE_MAX_LOG_CQE) - 1
		MaxMR:           memory.DefaultMaxRegions,
		MaxMRSize:       memory.DefaultMaxRegionSize,
		MaxMW:           DefaultMaxMW,
		MaxPD:           def,
		MaxAH:           def,
		MaxQPRdAtom:     128,
		MaxQPInitRdAtom: 128,
		MaxResRdAtom:    0x3f000,
		MaxSRQ:          def,
		MaxSRQWR:        def,
		MaxSRQSGE:       27,
		DeviceCap:       defaultCaps,
	}
}

// withDefaults fills zero fields from DefaultLimits and checks the result.
func (l Limits) withDefaults() (Limits, error) {
	d := DefaultLimits()
	fill := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&l.MaxQP, d.MaxQP)
	fill(&l.MaxQPWR, d.MaxQPWR)
	fill(&l.MaxSGE, d.MaxSGE)
	fill(&l.MaxSGERd, min(d.MaxSGERd, l.MaxSGE)) // a smaller MaxSGE bounds it
	fill(&l.MaxInlineData, d.MaxInlineData)
	fill(&l.MaxCQ, d.MaxCQ)
	fill(&l.MaxCQE, d.MaxCQE)
	fill(&l.MaxMR, d.MaxMR)
	fill(&l.MaxMW, d.MaxMW)
	fill(&l.MaxPD, d.MaxPD)
	fill(&l.MaxAH, d.MaxAH)
	fill(&l.MaxQPRdAtom, d.MaxQPRdAtom)
	fill(&l.MaxQPInitRdAtom, d.MaxQPInitRdAtom)
	fill(&l.MaxResRdAtom, d.MaxResRdAtom)
	fill(&l.MaxSRQ, d.MaxSRQ)
	fill(&l.MaxSRQWR, d.MaxSRQWR)
	fill(&l.MaxSRQSGE, d.MaxSRQSGE)
	if l.MaxMRSize == 0 {
		l.MaxMRSize = d.MaxMRSize
	}
	if l.DeviceCap == 0 {
		l.DeviceCap = d.DeviceCap
	}
	for _, c := range []struct {
		name   string
		v, max int
	}{
		{"MaxQP", l.MaxQP, maxQPN - 1}, // QPNs 2 .. 0xFFFFFE
		{"MaxQPWR", l.MaxQPWR, math.MaxInt32},
		{"MaxSGE", l.MaxSGE, math.MaxInt32},
		{"MaxSGERd", l.MaxSGERd, l.MaxSGE},
		{"MaxInlineData", l.MaxInlineData, verbs.MaxMsgSize},
		{"MaxCQ", l.MaxCQ, math.MaxInt32},
		{"MaxCQE", l.MaxCQE, math.MaxInt32},
		{"MaxMR", l.MaxMR, memory.MaxKeyIndex}, // memory.NewTable checks the sum with windows
		{"MaxMW", l.MaxMW, memory.MaxKeyIndex},
		{"MaxPD", l.MaxPD, math.MaxInt32},
		{"MaxAH", l.MaxAH, math.MaxInt32},
		// QPAttr carries max_rd_atomic and max_dest_rd_atomic in a byte.
		{"MaxQPRdAtom", l.MaxQPRdAtom, math.MaxUint8},
		{"MaxQPInitRdAtom", l.MaxQPInitRdAtom, math.MaxUint8},
		{"MaxResRdAtom", l.MaxResRdAtom, math.MaxInt32},
		{"MaxSRQ", l.MaxSRQ, math.MaxInt32},
		{"MaxSRQWR", l.MaxSRQWR, math.MaxInt32},
		{"MaxSRQSGE", l.MaxSRQSGE, math.MaxInt32},
	} {
		if c.v < 0 || c.v > c.max {
			return l, errorf(verbs.ErrInvalid, "limit %s = %d out of range 1..%d", c.name, c.v, c.max)
		}
	}
	return l, nil
}

// Query returns the device attributes (ibv_query_device).
func (d *Device) Query() verbs.DeviceAttr {
	l := &d.limits
	a := verbs.DeviceAttr{
		FwVer:            FirmwareVersion,
		NodeGUID:         d.guid,
		SysImageGUID:     d.guid,
		MaxMRSize:        l.MaxMRSize,
		PageSizeCap:      PageSizeCap,
		VendorID:         VendorID,
		VendorPartID:     VendorPartID,
		MaxQP:            l.MaxQP,
		MaxQPWR:          l.MaxQPWR,
		DeviceCapFlags:   l.DeviceCap,
		DeviceCapFlagsEx: d.capsEx(),
		MaxSGE:           l.MaxSGE,
		MaxSGERd:         l.MaxSGERd,
		MaxCQ:            l.MaxCQ,
		MaxCQE:           l.MaxCQE,
		MaxMR:            l.MaxMR,
		MaxMW:            l.MaxMW,
		MaxPD:            l.MaxPD,
		MaxQPRdAtom:      l.MaxQPRdAtom,
		MaxResRdAtom:     l.MaxResRdAtom,
		MaxQPInitRdAtom:  l.MaxQPInitRdAtom,
		AtomicCap:        d.atomicCap(),
		MaxAH:            l.MaxAH,
		MaxSRQ:           l.MaxSRQ,
		MaxSRQWR:         l.MaxSRQWR,
		MaxSRQSGE:        l.MaxSRQSGE,
		MaxPKeys:         maxPKeys,
		LocalCAAckDelay:  LocalCAAckDelay,
		PhysPortCnt:      1,
		MaxInlineData:    l.MaxInlineData,
		MaxMsgSize:       verbs.MaxMsgSize,
		Transport:        d.transport,
		NodeType:         d.transport.NodeType(),
	}
	d.mcastAttrs(&a)
	return a
}

// ibta15Caps are the extended flags of a RoCE device: the RoCE engine
// executes IBTA 1.5's FLUSH, with either placement type, and ATOMIC WRITE.
const ibta15Caps = verbs.DeviceFlushGlobal | verbs.DeviceFlushPersistent | verbs.DeviceAtomicWrite

// capsEx is the device's extended capability flags: IBTA 1.5's operations
// on a RoCE device, none on an iWARP one (RFC 5040 and RFC 7306 define no
// FLUSH and no ATOMIC WRITE).
func (d *Device) capsEx() verbs.DeviceCapEx {
	if d.transport == verbs.TransportIB {
		return ibta15Caps
	}
	return 0
}

// atomicCap is ATOMIC_GLOB: the responder executes every atomic with one
// sync/atomic instruction on the 8 bytes of host memory (memory.Ref's
// CompareSwap and FetchAdd), so it is atomic not only against other QPs of
// this device but against any CPU using atomic instructions on that word
// and against other rnic devices, even in other processes sharing the
// memory through memory.Shared. That is the IBTA's global atomicity; rxe,
// which uses a device-wide spinlock, can only claim ATOMIC_HCA.
func (d *Device) atomicCap() verbs.AtomicCap {
	if d.limits.NoAtomics {
		return verbs.AtomicNone
	}
	return verbs.AtomicGlob
}
