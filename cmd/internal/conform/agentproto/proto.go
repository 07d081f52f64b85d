package agentproto

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
)

// Version is the protocol version this package speaks.
const Version = 1

// MaxLine is the longest line either side accepts.
const MaxLine = 4 << 20

// Request is one line from the tester.
type Request struct {
	ID   uint64          `json:"id"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Response is the agent's answer to the Request with the same ID: a
// Result or an Error.
type Response struct {
	ID     uint64          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Error codes (see the package doc).
const (
	CodeBadRequest  = "bad_request"
	CodeUnknownOp   = "unknown_op"
	CodeVersion     = "version"
	CodeNoObject    = "no_object"
	CodeVerbs       = "verbs"
	CodeUnsupported = "unsupported"
	CodeTimeout     = "timeout"
	CodeRejected    = "rejected"
)

// Error is a failed request.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Reject is the peer's rejection (code "rejected"), if known.
	Reject *Reject `json:"reject,omitempty"`
}

// Reject is what a rejection said (IBTA Table 112 reason; 28 is a
// consumer's reject) and its private data.
type Reject struct {
	Reason      uint16 `json:"reason"`
	PrivateData []byte `json:"private_data,omitempty"`
}

func (e *Error) Error() string { return "agent: " + e.Code + ": " + e.Message }

// ErrLineTooLong is what DecodeRequest returns for a line over MaxLine.
var ErrLineTooLong = errors.New("agentproto: line too long")

// DecodeRequest parses one request line. The op must be non-empty.
func DecodeRequest(line []byte) (Request, error) {
	var r Request
	if len(line) > MaxLine {
		return r, ErrLineTooLong
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return Request{}, fmt.Errorf("agentproto: bad request: %w", err)
	}
	if r.Op == "" {
		return Request{}, errors.New("agentproto: bad request: no op")
	}
	return r, nil
}

// DecodeArgs decodes a request's arguments into v; absent arguments leave
// v at its zero value.
func DecodeArgs(r Request, v any) error {
	if len(r.Args) == 0 || string(r.Args) == "null" {
		return nil
	}
	if err := json.Unmarshal(r.Args, v); err != nil {
		return fmt.Errorf("agentproto: %s: bad args: %w", r.Op, err)
	}
	return nil
}

// NewScanner returns a line scanner for one side of the connection,
// accepting lines up to MaxLine.
func NewScanner(r *bufio.Reader) *bufio.Scanner {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), MaxLine+1)
	return s
}

// Operation names.
const (
	OpHello        = "hello"
	OpDeviceInfo   = "device_info"
	OpCreatePD     = "create_pd"
	OpRegMR        = "reg_mr"
	OpDeregMR      = "dereg_mr"
	OpCreateCQ     = "create_cq"
	OpCreateQP     = "create_qp"
	OpModifyQP     = "modify_qp"
	OpQueryQP      = "query_qp"
	OpDestroyQP    = "destroy_qp"
	OpPostSend     = "post_send"
	OpPostRecv     = "post_recv"
	OpPollCQ       = "poll_cq"
	OpReadMR       = "read_mr"
	OpWriteMR      = "write_mr"
	OpEvents       = "events"
	OpCounters     = "counters"
	OpCMListen     = "cm_listen"
	OpCMAccept     = "cm_accept"
	OpCMConnect    = "cm_connect"
	OpCMDisconnect = "cm_disconnect"
	OpReset        = "reset"
	OpAllocMW      = "alloc_mw"
	OpDeallocMW    = "dealloc_mw"
	OpAttachMcast  = "attach_mcast"
	OpDetachMcast  = "detach_mcast"
)

// Hello opens a session.
type Hello struct {
	Version int    `json:"version"`
	Tester  string `json:"tester,omitempty"`
}

// HelloResult names the agent and its device.
type HelloResult struct {
	Version int    `json:"version"`
	Agent   string `json:"agent"`
	Device  string `json:"device"`
}

// DeviceInfo is what the tester needs to know about the DUT.
type DeviceInfo struct {
	Name string `json:"name"`
	// Kind says what the DUT is, for known deviations: "rnic", "rxe",
	// "siw", or the libibverbs driver's name.
	Kind string `json:"kind"`
	// Transport is "roce" or "iwarp".
	Transport string   `json:"transport"`
	GIDs      []string `json:"gids"`
	// MAC is the port's Ethernet address ("" when unknown).
	MAC string `json:"mac,omitempty"`
	// ActiveMTU is port 1's active path MTU in bytes.
	ActiveMTU       int    `json:"active_mtu"`
	MaxQPWR         int    `json:"max_qp_wr"`
	MaxSGE          int    `json:"max_sge"`
	MaxCQE          int    `json:"max_cqe"`
	MaxMRSize       uint64 `json:"max_mr_size"`
	MaxQPRdAtom     int    `json:"max_qp_rd_atom"`
	MaxQPInitRdAtom int    `json:"max_qp_init_rd_atom"`
	// Atomics is false when the device offers no atomic operations
	// (IBV_ATOMIC_NONE).
	Atomics bool `json:"atomics"`
	// AtomicWrite and Flush say the device offers IBTA 1.5's ATOMIC WRITE
	// and FLUSH (device_cap_flags_ex: ATOMIC_WRITE, FLUSH_GLOBAL and
	// FLUSH_PERSISTENT both for Flush).
	AtomicWrite bool `json:"atomic_write,omitempty"`
	Flush       bool `json:"flush,omitempty"`
	// MWType2B is true when the agent can allocate type 2B memory
	// windows (max_mw > 0, IBV_DEVICE_MEM_WINDOW_TYPE_2B) and post their
	// binds.
	MWType2B bool `json:"mw_type_2b,omitempty"`
	// Multicast is true when the device offers multicast UD
	// (max_mcast_grp and max_mcast_qp_attach > 0): the agent can attach
	// its UD QPs to groups.
	Multicast bool `json:"multicast,omitempty"`
	// CM is true when the agent can run rdma_cm on the device.
	CM bool `json:"cm"`
	// Host is the kernel the agent runs on ("Linux 6.1.0-56-amd64"; ""
	// when unknown): the version of a kernel driver DUT.
	Host string `json:"host,omitempty"`
}

// Handle names one object of the connection.
type Handle struct {
	H uint32 `json:"h"`
}

// RegMR registers Len zeroed bytes of agent memory.
type RegMR struct {
	PD     uint32 `json:"pd"`
	Len    int    `json:"len"`
	Access uint32 `json:"access"`
}

// MRInfo is a registered region.
type MRInfo struct {
	H    uint32 `json:"h"`
	LKey uint32 `json:"lkey"`
	RKey uint32 `json:"rkey"`
	Addr uint64 `json:"addr"`
	Len  uint64 `json:"len"`
}

// AllocMW allocates a memory window of Type (1, or 2 for 2B) in PD.
type AllocMW struct {
	PD   uint32 `json:"pd"`
	Type uint8  `json:"type"`
}

// MWInfo is an allocated window: its handle and rkey.
type MWInfo struct {
	H    uint32 `json:"h"`
	RKey uint32 `json:"rkey"`
}

// MWBind is a BIND_MW WR's bind (verbs.MWBind): the window by its rkey,
// the MR by its lkey, the range, the window's rights and its new rkey.
type MWBind struct {
	Window uint32 `json:"mw_rkey"`
	MR     uint32 `json:"mr_lkey"`
	Addr   uint64 `json:"addr"`
	Length uint64 `json:"length"`
	Access uint32 `json:"access"`
	RKey   uint32 `json:"rkey"`
}

// Mcast attaches a UD QP to, or detaches it from, the multicast group
// GID (ibv_attach_mcast, ibv_detach_mcast): an IPv6 multicast address or
// an IPv4 one (attached as its IPv4-mapped GID); the LID is 0, as on
// every RoCE port.
type Mcast struct {
	QP  uint32 `json:"qp"`
	GID string `json:"gid"`
}

// CreateCQ creates a completion queue of at least CQE entries.
type CreateCQ struct {
	CQE int `json:"cqe"`
}

// QPCap are a QP's queue sizes.
type QPCap struct {
	MaxSendWR     uint32 `json:"max_send_wr"`
	MaxRecvWR     uint32 `json:"max_recv_wr"`
	MaxSendSGE    uint32 `json:"max_send_sge"`
	MaxRecvSGE    uint32 `json:"max_recv_sge"`
	MaxInlineData uint32 `json:"max_inline_data"`
}

// CreateQP creates a QP (in RESET).
type CreateQP struct {
	PD     uint32 `json:"pd"`
	Type   uint8  `json:"type"`
	SendCQ uint32 `json:"send_cq"`
	RecvCQ uint32 `json:"recv_cq"`
	Cap    QPCap  `json:"cap"`
	SigAll bool   `json:"sig_all,omitempty"`
}

// QPInfo is a created QP.
type QPInfo struct {
	H   uint32 `json:"h"`
	QPN uint32 `json:"qpn"`
	Cap QPCap  `json:"cap"`
}

// AV is an address vector (struct ibv_ah_attr with its GRH).
type AV struct {
	DGID         string `json:"dgid"`
	SGIDIndex    uint8  `json:"sgid_index"`
	FlowLabel    uint32 `json:"flow_label,omitempty"`
	HopLimit     uint8  `json:"hop_limit,omitempty"`
	TrafficClass uint8  `json:"traffic_class,omitempty"`
	SL           uint8  `json:"sl,omitempty"`
	// DMAC is the next hop's MAC ("" to resolve).
	DMAC string `json:"dmac,omitempty"`
	// SrcPort is the UDP source port (0: the QP's default).
	SrcPort uint16 `json:"src_port,omitempty"`
}

// QPAttr are QP attributes. In modify_qp the fields present form the
// attribute mask; query_qp fills every field.
type QPAttr struct {
	State           *uint8  `json:"state,omitempty"`
	PathMTU         *int    `json:"path_mtu,omitempty"`
	QKey            *uint32 `json:"qkey,omitempty"`
	RQPSN           *uint32 `json:"rq_psn,omitempty"`
	SQPSN           *uint32 `json:"sq_psn,omitempty"`
	DestQPN         *uint32 `json:"dest_qp_num,omitempty"`
	Access          *uint32 `json:"qp_access_flags,omitempty"`
	AV              *AV     `json:"ah_attr,omitempty"`
	PKeyIndex       *uint16 `json:"pkey_index,omitempty"`
	Port            *uint8  `json:"port_num,omitempty"`
	Timeout         *uint8  `json:"timeout,omitempty"`
	RetryCnt        *uint8  `json:"retry_cnt,omitempty"`
	RNRRetry        *uint8  `json:"rnr_retry,omitempty"`
	MinRNRTimer     *uint8  `json:"min_rnr_timer,omitempty"`
	MaxRdAtomic     *uint8  `json:"max_rd_atomic,omitempty"`
	MaxDestRdAtomic *uint8  `json:"max_dest_rd_atomic,omitempty"`
}

// ModifyQP modifies a QP.
type ModifyQP struct {
	QP   uint32 `json:"qp"`
	Attr QPAttr `json:"attr"`
}

// SGE is a scatter/gather element in the agent's registered memory.
type SGE struct {
	Addr uint64 `json:"addr"`
	Len  uint32 `json:"length"`
	LKey uint32 `json:"lkey"`
}

// SendWR is a send work request.
type SendWR struct {
	ID         uint64 `json:"wr_id"`
	Opcode     uint8  `json:"opcode"`
	Flags      uint8  `json:"send_flags,omitempty"`
	SGL        []SGE  `json:"sg_list,omitempty"`
	Imm        uint32 `json:"imm_data,omitempty"`
	InvRKey    uint32 `json:"invalidate_rkey,omitempty"`
	RemoteAddr uint64 `json:"remote_addr,omitempty"`
	RKey       uint32 `json:"rkey,omitempty"`
	CompareAdd uint64 `json:"compare_add,omitempty"`
	Swap       uint64 `json:"swap,omitempty"`
	// BIND_MW: the bind.
	Bind *MWBind `json:"bind,omitempty"`
	// UD: the destination.
	AH         *AV    `json:"ah,omitempty"`
	RemoteQPN  uint32 `json:"remote_qpn,omitempty"`
	RemoteQKey uint32 `json:"remote_qkey,omitempty"`
}

// PostSend posts send WRs in order.
type PostSend struct {
	QP  uint32   `json:"qp"`
	WRs []SendWR `json:"wrs"`
}

// RecvWR is a receive work request.
type RecvWR struct {
	ID  uint64 `json:"wr_id"`
	SGL []SGE  `json:"sg_list,omitempty"`
}

// PostRecv posts receive WRs to a QP's receive queue.
type PostRecv struct {
	QP  uint32   `json:"qp"`
	WRs []RecvWR `json:"wrs"`
}

// PollCQ polls up to Max completions, waiting up to WaitMS for the
// first Max to arrive (0: return what is there).
type PollCQ struct {
	CQ     uint32 `json:"cq"`
	Max    int    `json:"max"`
	WaitMS int    `json:"wait_ms,omitempty"`
}

// WC is a work completion.
type WC struct {
	ID         uint64 `json:"wr_id"`
	Status     uint8  `json:"status"`
	StatusName string `json:"status_name"`
	Opcode     uint8  `json:"opcode"`
	OpcodeName string `json:"opcode_name"`
	VendorErr  uint32 `json:"vendor_err,omitempty"`
	ByteLen    uint32 `json:"byte_len"`
	Imm        uint32 `json:"imm_data,omitempty"`
	InvRKey    uint32 `json:"invalidated_rkey,omitempty"`
	QPN        uint32 `json:"qp_num"`
	SrcQP      uint32 `json:"src_qp,omitempty"`
	Flags      uint8  `json:"wc_flags,omitempty"`
}

// PollResult are the completions polled, oldest first.
type PollResult struct {
	WCs []WC `json:"wcs"`
}

// ReadMR reads Len bytes of an MR from offset Off.
type ReadMR struct {
	MR  uint32 `json:"mr"`
	Off uint64 `json:"offset"`
	Len int    `json:"len"`
}

// Data is memory contents.
type Data struct {
	Data []byte `json:"data"`
}

// WriteMR writes Data into an MR from offset Off.
type WriteMR struct {
	MR   uint32 `json:"mr"`
	Off  uint64 `json:"offset"`
	Data []byte `json:"data"`
}

// Wait bounds a wait in milliseconds.
type Wait struct {
	WaitMS int `json:"wait_ms,omitempty"`
}

// Event is an asynchronous event (IBV_EVENT_* value and name); QP is the
// handle of the QP it concerns, 0 for none.
type Event struct {
	Type uint8  `json:"type"`
	Name string `json:"name"`
	QP   uint32 `json:"qp,omitempty"`
	QPN  uint32 `json:"qpn,omitempty"`
}

// EventsResult are the events since the last events call.
type EventsResult struct {
	Events []Event `json:"events"`
}

// Counter is one port counter.
type Counter struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// CountersResult are the port's counters (empty if the device has none).
type CountersResult struct {
	Counters []Counter `json:"counters"`
}

// ConnParam are rdma_cm connection parameters (zero: rdma_cm's defaults).
type ConnParam struct {
	ResponderResources uint8  `json:"responder_resources,omitempty"`
	InitiatorDepth     uint8  `json:"initiator_depth,omitempty"`
	RetryCount         uint8  `json:"retry_count,omitempty"`
	RNRRetryCount      uint8  `json:"rnr_retry_count,omitempty"`
	Access             uint32 `json:"access,omitempty"`
}

// CMListen listens for rdma_cm connection requests on Port (0: any).
type CMListen struct {
	Port uint16 `json:"port"`
}

// CMListenResult is a listener.
type CMListenResult struct {
	H    uint32 `json:"h"`
	Port uint16 `json:"port"`
}

// CMAccept waits up to WaitMS for a request on Listener and accepts it
// with QP (or rejects it when Reject is set).
type CMAccept struct {
	Listener    uint32    `json:"listener"`
	QP          uint32    `json:"qp"`
	PrivateData []byte    `json:"private_data,omitempty"`
	Param       ConnParam `json:"param"`
	Reject      bool      `json:"reject,omitempty"`
	WaitMS      int       `json:"wait_ms,omitempty"`
}

// CMConnect connects QP to Addr:Port.
type CMConnect struct {
	QP          uint32    `json:"qp"`
	Addr        string    `json:"addr"`
	Port        uint16    `json:"port"`
	PrivateData []byte    `json:"private_data,omitempty"`
	Param       ConnParam `json:"param"`
	WaitMS      int       `json:"wait_ms,omitempty"`
}

// CMConnInfo is an established connection (H 0 after a reject).
type CMConnInfo struct {
	H           uint32 `json:"h"`
	RemoteQPN   uint32 `json:"remote_qpn"`
	PrivateData []byte `json:"private_data,omitempty"`
	LocalAddr   string `json:"local_addr"`
	RemoteAddr  string `json:"remote_addr"`
}
