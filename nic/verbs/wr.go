package verbs

import "github.com/rnic/rnic/memory"

// SGE is a scatter/gather element: a local address range and its lkey.
type SGE = memory.SGE

// Access is a set of memory access rights (IBV_ACCESS_*).
type Access = memory.Access

// WROpcode is the operation a send work request asks for (enum
// ibv_wr_opcode).
type WROpcode uint8

// Send work request opcodes.
const (
	WRRDMAWrite        WROpcode = 0
	WRRDMAWriteWithImm WROpcode = 1
	WRSend             WROpcode = 2
	WRSendWithImm      WROpcode = 3
	WRRDMARead         WROpcode = 4
	WRAtomicCmpSwp     WROpcode = 5
	WRAtomicFetchAdd   WROpcode = 6
	WRLocalInv         WROpcode = 7
	WRBindMW           WROpcode = 8
	WRSendWithInv      WROpcode = 9
	WRFlush            WROpcode = 14
	WRAtomicWrite      WROpcode = 15
)

func (o WROpcode) String() string {
	switch o {
	case WRRDMAWrite:
		return "RDMA_WRITE"
	case WRRDMAWriteWithImm:
		return "RDMA_WRITE_WITH_IMM"
	case WRSend:
		return "SEND"
	case WRSendWithImm:
		return "SEND_WITH_IMM"
	case WRRDMARead:
		return "RDMA_READ"
	case WRAtomicCmpSwp:
		return "ATOMIC_CMP_AND_SWP"
	case WRAtomicFetchAdd:
		return "ATOMIC_FETCH_AND_ADD"
	case WRLocalInv:
		return "LOCAL_INV"
	case WRBindMW:
		return "BIND_MW"
	case WRSendWithInv:
		return "SEND_WITH_INV"
	case WRFlush:
		return "FLUSH"
	case WRAtomicWrite:
		return "ATOMIC_WRITE"
	}
	return "UNKNOWN"
}

// CompletionOpcode returns the completion opcode reported for a send WR.
func (o WROpcode) CompletionOpcode() WCOpcode {
	switch o {
	case WRRDMAWrite, WRRDMAWriteWithImm:
		return WCRDMAWrite
	case WRRDMARead:
		return WCRDMARead
	case WRAtomicCmpSwp:
		return WCCompSwap
	case WRAtomicFetchAdd:
		return WCFetchAdd
	case WRLocalInv:
		return WCLocalInv
	case WRBindMW:
		return WCBindMW
	case WRFlush:
		return WCFlush
	case WRAtomicWrite:
		return WCAtomicWrite
	}
	return WCSend
}

// SendFlags qualify a send work request (enum ibv_send_flags).
type SendFlags uint8

// Send flags.
const (
	SendFence     SendFlags = 1 << 0 // wait for prior READ and atomic WRs to complete
	SendSignaled  SendFlags = 1 << 1 // generate a completion even if the QP signals selectively
	SendSolicited SendFlags = 1 << 2 // set SE in the last packet
	SendInline    SendFlags = 1 << 3 // copy the data at post time; lkeys are not checked
)

// MWBind is what a BIND_MW work request binds (struct ibv_send_wr's
// bind_mw, named by keys as rxe's WQE names it): the window by its rkey at
// post time, the MR by its lkey, the range and the window's remote rights,
// and the rkey the window gets (the consumer's key byte, IncRKey).
type MWBind = memory.WindowBind

// IncRKey returns rkey with its 8-bit key part incremented, the index part
// kept (ibv_inc_rkey): the next rkey a consumer asks a bind for.
func IncRKey(rkey uint32) uint32 { return rkey&^0xff | (rkey+1)&0xff }

// SendWR is a send work request (struct ibv_send_wr).
type SendWR struct {
	ID     uint64
	Opcode WROpcode
	Flags  SendFlags
	SGL    []SGE
	Imm    uint32 // SEND_WITH_IMM, RDMA_WRITE_WITH_IMM
	// InvRKey is the rkey SEND_WITH_INV invalidates at the responder, or
	// the key LOCAL_INV invalidates locally.
	InvRKey uint32

	// RDMA and atomic operations.
	RemoteAddr uint64
	RKey       uint32
	CompareAdd uint64 // CmpSwap: compare; FetchAdd: add
	// Swap is CmpSwap's swap value, and ATOMIC_WRITE's 8 bytes: placed
	// in the remote memory as this number in host byte order (the bytes
	// ibv_wr_atomic_write's pointer points at).
	Swap uint64

	// FLUSH (IBTA 1.5): what it asks for (one or both placement types),
	// of what (the range at RemoteAddr of FlushLen bytes, or the whole
	// region RKey names).
	FlushType  FlushType
	FlushLevel FlushLevel
	FlushLen   uint32

	// Inline is the message of a SendInline WR, copied by nic at post
	// time (from SGL through the lkeys, or from the caller's Inline). An
	// engine sends these bytes and ignores SGL when Inline is non-nil.
	Inline []byte

	// BIND_MW.
	Bind MWBind

	// UD only.
	AH         *AddressVector
	RemoteQPN  uint32
	RemoteQKey uint32
}

// FlushType is a FLUSH's placement types (enum ibv_placement_type).
type FlushType uint8

// Placement types: the data placed before the FLUSH becomes visible to
// every reader of the memory (global visibility), or persistent.
const (
	FlushGlobal     FlushType = 1 << 0 // IBV_FLUSH_GLOBAL
	FlushPersistent FlushType = 1 << 1 // IBV_FLUSH_PERSISTENT
	// FlushTypes is every placement type.
	FlushTypes = FlushGlobal | FlushPersistent
)

// FlushLevel is a FLUSH's selectivity (enum ibv_selectivity_level).
type FlushLevel uint8

// Selectivity levels.
const (
	FlushRange FlushLevel = 0 // IBV_FLUSH_RANGE: RemoteAddr and FlushLen
	FlushMR    FlushLevel = 1 // IBV_FLUSH_MR: the whole region of RKey
)

// RecvWR is a receive work request (struct ibv_recv_wr).
type RecvWR struct {
	ID  uint64
	SGL []SGE
}
