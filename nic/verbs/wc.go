package verbs

// WCStatus is the status of a work completion (enum ibv_wc_status).
type WCStatus uint8

// Completion statuses, IBTA Vol 1 §11.4.2.1.
const (
	WCSuccess WCStatus = iota
	WCLocLenErr
	WCLocQPOpErr
	WCLocEECOpErr
	WCLocProtErr
	WCWRFlushErr
	WCMWBindErr
	WCBadRespErr
	WCLocAccessErr
	WCRemInvReqErr
	WCRemAccessErr
	WCRemOpErr
	WCRetryExcErr
	WCRNRRetryExcErr
	WCLocRDDViolErr
	WCRemInvRDReqErr
	WCRemAbortErr
	WCInvEECNErr
	WCInvEECStateErr
	WCFatalErr
	WCRespTimeoutErr
	WCGeneralErr
)

var wcStatusNames = [...]string{
	"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR", "WR_FLUSH_ERR",
	"MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR", "REM_OP_ERR",
	"RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR",
	"INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR",
}

func (s WCStatus) String() string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return "UNKNOWN_STATUS"
}

// WCOpcode is the operation a completion reports (enum ibv_wc_opcode).
type WCOpcode uint8

// Completion opcodes. Receive completions have bit 7 set.
const (
	WCSend            WCOpcode = 0
	WCRDMAWrite       WCOpcode = 1
	WCRDMARead        WCOpcode = 2
	WCCompSwap        WCOpcode = 3
	WCFetchAdd        WCOpcode = 4
	WCBindMW          WCOpcode = 5
	WCLocalInv        WCOpcode = 6
	WCFlush           WCOpcode = 8
	WCAtomicWrite     WCOpcode = 9
	WCRecv            WCOpcode = 128
	WCRecvRDMAWithImm WCOpcode = 129
)

func (o WCOpcode) String() string {
	switch o {
	case WCSend:
		return "SEND"
	case WCRDMAWrite:
		return "RDMA_WRITE"
	case WCRDMARead:
		return "RDMA_READ"
	case WCCompSwap:
		return "COMP_SWAP"
	case WCFetchAdd:
		return "FETCH_ADD"
	case WCBindMW:
		return "BIND_MW"
	case WCLocalInv:
		return "LOCAL_INV"
	case WCFlush:
		return "FLUSH"
	case WCAtomicWrite:
		return "ATOMIC_WRITE"
	case WCRecv:
		return "RECV"
	case WCRecvRDMAWithImm:
		return "RECV_RDMA_WITH_IMM"
	}
	return "UNKNOWN_OPCODE"
}

// WCFlags qualify a completion (enum ibv_wc_flags).
type WCFlags uint8

// Completion flags.
const (
	WCFlagGRH     WCFlags = 1 << 0 // a 40-byte GRH area precedes the data (UD)
	WCFlagWithImm WCFlags = 1 << 1
	WCFlagWithInv WCFlags = 1 << 3
)

// WC is a work completion (struct ibv_wc). For an error completion only
// WRID, Status, QPN and VendorErr are defined, as in verbs.
type WC struct {
	WRID      uint64
	Status    WCStatus
	Opcode    WCOpcode
	VendorErr uint32
	ByteLen   uint32
	Imm       uint32 // valid with WCFlagWithImm; host order of the wire's big-endian value
	InvRKey   uint32 // valid with WCFlagWithInv
	QPN       uint32
	SrcQP     uint32 // UD: the sender's QPN
	Flags     WCFlags
	PKeyIndex uint16
	// SL: on a UD receive, the RoCE L3 header type of the datagram
	// (WCSLRoCEIPv4, WCSLRoCEIPv6), where mlx5 reports it: RoCE has no
	// service level on the wire, and consumers read the type there (UCX's
	// ud_verbs takes the GRH area's DGID length from it). 0 elsewhere.
	SL uint8
}

// The RoCE L3 header types a UD receive reports in WC.SL, as mlx5 does
// (its CQE's packet type, which rdma-core's mlx5 provider copies to
// ibv_wc.sl). rxe reports 0, and UCX 1.13's ud_verbs then drops every
// IPv4 datagram (it reads a 16-byte DGID where the IPv4 header lies).
const (
	WCSLRoCEIPv6 uint8 = 1
	WCSLRoCEIPv4 uint8 = 2
)
