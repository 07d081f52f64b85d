// What a device reports about itself (ibv_query_device and struct
// ibv_device): its attributes, capability flags, transport and node type.
// Every backend fills these in and the verbs API hands them out, so they
// live here rather than with any one implementation.

package verbs

import (
	"fmt"

	"github.com/rnic/rnic/memory"
)

// DeviceAttr is what a device's Query reports (struct ibv_device_attr, with
// max_msg_sz and max_inline_data, which libibverbs reports elsewhere, added).
type DeviceAttr struct {
	FwVer          string
	NodeGUID       uint64 // EUI-64 from the MAC; the big-endian wire value as a number
	SysImageGUID   uint64
	MaxMRSize      uint64
	PageSizeCap    uint64
	VendorID       uint32
	VendorPartID   uint32
	HWVer          uint32
	MaxQP          int
	MaxQPWR        int
	DeviceCapFlags DeviceCap
	// DeviceCapFlagsEx is what device_cap_flags_ex has beyond
	// DeviceCapFlags' 32 bits.
	DeviceCapFlagsEx DeviceCapEx
	MaxSGE           int // send and receive SGEs of a QP WR
	MaxSGERd         int
	MaxCQ            int
	MaxCQE           int
	MaxMR            int
	MaxPD            int
	MaxQPRdAtom      int
	MaxResRdAtom     int
	MaxQPInitRdAtom  int
	AtomicCap        AtomicCap
	MaxMW            int // 0: no memory-window verbs
	MaxAH            int
	MaxSRQ           int
	MaxSRQWR         int
	MaxSRQSGE        int
	MaxPKeys         int
	LocalCAAckDelay  uint8
	PhysPortCnt      uint8
	MaxInlineData    int
	MaxMsgSize       uint64
	// Multicast limits: groups of the device, QPs attached to one group,
	// attachments in all (0 when the device has no multicast).
	MaxMcastGrp           int
	MaxMcastQPAttach      int
	MaxTotalMcastQPAttach int
	// Transport and NodeType are struct ibv_device's transport_type and
	// node_type.
	Transport Transport
	NodeType  NodeType
}

// AtomicCap says how atomic the device's atomic operations are (enum
// ibv_atomic_cap).
type AtomicCap uint8

// Atomic capabilities.
const (
	AtomicNone AtomicCap = 0 // IBV_ATOMIC_NONE: no atomic operations
	AtomicHCA  AtomicCap = 1 // IBV_ATOMIC_HCA: atomic among QPs of this device
	AtomicGlob AtomicCap = 2 // IBV_ATOMIC_GLOB: atomic also against CPUs and other devices
)

func (a AtomicCap) String() string {
	switch a {
	case AtomicNone:
		return "ATOMIC_NONE"
	case AtomicHCA:
		return "ATOMIC_HCA"
	case AtomicGlob:
		return "ATOMIC_GLOB"
	}
	return fmt.Sprintf("AtomicCap(%d)", uint8(a))
}

// DeviceCap is a set of device capability flags (enum
// ibv_device_cap_flags, libibverbs values).
type DeviceCap uint32

// Device capability flags a backend can advertise.
const (
	DeviceBadPKeyCntr     DeviceCap = 1 << 1  // IBV_DEVICE_BAD_PKEY_CNTR: the port counts packets with a bad P_Key
	DeviceBadQKeyCntr     DeviceCap = 1 << 2  // IBV_DEVICE_BAD_QKEY_CNTR: the port counts Q_Key violations
	DeviceAutoPathMig     DeviceCap = 1 << 4  // IBV_DEVICE_AUTO_PATH_MIG: path_mig_state is kept (RoCE has no alternate path)
	DeviceChangePhyPort   DeviceCap = 1 << 5  // IBV_DEVICE_CHANGE_PHY_PORT: port_num may be given again (INIT→INIT, SQD→SQD)
	DeviceUDAVPortEnforce DeviceCap = 1 << 6  // IBV_DEVICE_UD_AV_PORT_ENFORCE: AH port numbers are checked
	DeviceCurrQPStateMod  DeviceCap = 1 << 7  // IBV_DEVICE_CURR_QP_STATE_MOD: modify accepts the current state
	DeviceSysImageGUID    DeviceCap = 1 << 11 // IBV_DEVICE_SYS_IMAGE_GUID
	DeviceRCRNRNAKGen     DeviceCap = 1 << 12 // IBV_DEVICE_RC_RNR_NAK_GEN: RC responders send RNR NAKs
	DeviceSRQResize       DeviceCap = 1 << 13 // IBV_DEVICE_SRQ_RESIZE
	// DevicePortActiveEvent: IBV_EVENT_PORT_ACTIVE when the port comes up.
	DevicePortActiveEvent DeviceCap = 1 << 10
	// DeviceMemMgtExtensions: IBV_DEVICE_MEM_MGT_EXTENSIONS, of which
	// userspace sees LOCAL_INV and SEND_WITH_INV.
	DeviceMemMgtExtensions DeviceCap = 1 << 21
	DeviceMemWindow        DeviceCap = 1 << 17 // IBV_DEVICE_MEM_WINDOW: ibv_alloc_mw, ibv_bind_mw (type 1)
	DeviceMemWindowType2B  DeviceCap = 1 << 24 // IBV_DEVICE_MEM_WINDOW_TYPE_2B: BIND_MW work requests
)

// DeviceCapEx is a set of the extended device capability flags above bit
// 31 (enum ib_uverbs_device_cap_flags, the upper half of
// ibv_device_attr_ex's device_cap_flags_ex).
type DeviceCapEx uint64

// Extended capability flags: IBTA 1.5's FLUSH with each placement type,
// and ATOMIC WRITE.
const (
	DeviceFlushGlobal     DeviceCapEx = 1 << 38 // IB_UVERBS_DEVICE_FLUSH_GLOBAL
	DeviceFlushPersistent DeviceCapEx = 1 << 39 // IB_UVERBS_DEVICE_FLUSH_PERSISTENT
	DeviceAtomicWrite     DeviceCapEx = 1 << 40 // IB_UVERBS_DEVICE_ATOMIC_WRITE
)

// Allows reports whether a device with these flags offers op: FLUSH needs
// a FLUSH placement type, ATOMIC WRITE its own flag; every other opcode is
// not theirs to decide.
func (c DeviceCapEx) Allows(op WROpcode) bool {
	switch op {
	case WRFlush:
		return c&(DeviceFlushGlobal|DeviceFlushPersistent) != 0
	case WRAtomicWrite:
		return c&DeviceAtomicWrite != 0
	}
	return true
}

// FlushAccess returns the FLUSH access flags (memory.FlushGlobal,
// memory.FlushPersistent) a device with these flags accepts in an MR or QP.
func (c DeviceCapEx) FlushAccess() Access {
	var a Access
	if c&DeviceFlushGlobal != 0 {
		a |= memory.FlushGlobal
	}
	if c&DeviceFlushPersistent != 0 {
		a |= memory.FlushPersistent
	}
	return a
}

// MaxMsgSize is the largest message: 2^31 bytes, the IBTA limit (a RETH
// DMA length above 2^31 is invalid, C9-94).
const MaxMsgSize = 1 << 31

// Transport is a device's transport (enum ibv_transport_type: the values
// are libibverbs').
type Transport uint8

// Transports.
const (
	// TransportIB is InfiniBand transport; RoCEv2 carries it over UDP.
	TransportIB Transport = 0 // IBV_TRANSPORT_IB
	// TransportIWARP is RDMAP/DDP/MPA over TCP.
	TransportIWARP Transport = 1 // IBV_TRANSPORT_IWARP
)

func (t Transport) String() string {
	switch t {
	case TransportIB:
		return "InfiniBand"
	case TransportIWARP:
		return "iWARP"
	}
	return fmt.Sprintf("transport(%d)", uint8(t))
}

// NodeType is a device's node type (enum ibv_node_type: the values are
// libibverbs').
type NodeType uint8

// Node types rnic's devices have.
const (
	NodeCA   NodeType = 1 // IBV_NODE_CA: an IB (here RoCE) channel adapter
	NodeRNIC NodeType = 4 // IBV_NODE_RNIC: an iWARP RDMA NIC
)

func (n NodeType) String() string {
	switch n {
	case NodeCA:
		return "CA"
	case NodeRNIC:
		return "RNIC"
	}
	return fmt.Sprintf("node(%d)", uint8(n))
}

// NodeType is the node type of a device with transport t.
func (t Transport) NodeType() NodeType {
	if t == TransportIWARP {
		return NodeRNIC
	}
	return NodeCA
}
