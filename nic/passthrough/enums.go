//go:build verbs

// The numbers nic/verbs and nic share with libibverbs, next to
// libibverbs' own (from <infiniband/verbs.h>), so a test can prove every
// conversion in this package is a plain copy. (Test files cannot use cgo,
// hence a table here.)

package passthrough

/*
#include "shim.h"
*/
import "C"

import (
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// enumPair is one constant: rnic's value and libibverbs'.
type enumPair struct {
	name             string
	rnic, libibverbs int64
}

func enumPairs() []enumPair {
	return []enumPair{
		// enum ibv_wc_status: all 22 of IBTA's (tag-matching ones have no
		// rnic name).
		{"IBV_WC_SUCCESS", int64(verbs.WCSuccess), C.IBV_WC_SUCCESS},
		{"IBV_WC_LOC_LEN_ERR", int64(verbs.WCLocLenErr), C.IBV_WC_LOC_LEN_ERR},
		{"IBV_WC_LOC_QP_OP_ERR", int64(verbs.WCLocQPOpErr), C.IBV_WC_LOC_QP_OP_ERR},
		{"IBV_WC_LOC_EEC_OP_ERR", int64(verbs.WCLocEECOpErr), C.IBV_WC_LOC_EEC_OP_ERR},
		{"IBV_WC_LOC_PROT_ERR", int64(verbs.WCLocProtErr), C.IBV_WC_LOC_PROT_ERR},
		{"IBV_WC_WR_FLUSH_ERR", int64(verbs.WCWRFlushErr), C.IBV_WC_WR_FLUSH_ERR},
		{"IBV_WC_MW_BIND_ERR", int64(verbs.WCMWBindErr), C.IBV_WC_MW_BIND_ERR},
		{"IBV_WC_BAD_RESP_ERR", int64(verbs.WCBadRespErr), C.IBV_WC_BAD_RESP_ERR},
		{"IBV_WC_LOC_ACCESS_ERR", int64(verbs.WCLocAccessErr), C.IBV_WC_LOC_ACCESS_ERR},
		{"IBV_WC_REM_INV_REQ_ERR", int64(verbs.WCRemInvReqErr), C.IBV_WC_REM_INV_REQ_ERR},
		{"IBV_WC_REM_ACCESS_ERR", int64(verbs.WCRemAccessErr), C.IBV_WC_REM_ACCESS_ERR},
		{"IBV_WC_REM_OP_ERR", int64(verbs.WCRemOpErr), C.IBV_WC_REM_OP_ERR},
		{"IBV_WC_RETRY_EXC_ERR", int64(verbs.WCRetryExcErr), C.IBV_WC_RETRY_EXC_ERR},
		{"IBV_WC_RNR_RETRY_EXC_ERR", int64(verbs.WCRNRRetryExcErr), C.IBV_WC_RNR_RETRY_EXC_ERR},
		{"IBV_WC_LOC_RDD_VIOL_ERR", int64(verbs.WCLocRDDViolErr), C.IBV_WC_LOC_RDD_VIOL_ERR},
		{"IBV_WC_REM_INV_RD_REQ_ERR", int64(verbs.WCRemInvRDReqErr), C.IBV_WC_REM_INV_RD_REQ_ERR},
		{"IBV_WC_REM_ABORT_ERR", int64(verbs.WCRemAbortErr), C.IBV_WC_REM_ABORT_ERR},
		{"IBV_WC_INV_EECN_ERR", int64(verbs.WCInvEECNErr), C.IBV_WC_INV_EECN_ERR},
		{"IBV_WC_INV_EEC_STATE_ERR", int64(verbs.WCInvEECStateErr), C.IBV_WC_INV_EEC_STATE_ERR},
		{"IBV_WC_FATAL_ERR", int64(verbs.WCFatalErr), C.IBV_WC_FATAL_ERR},
		{"IBV_WC_RESP_TIMEOUT_ERR", int64(verbs.WCRespTimeoutErr), C.IBV_WC_RESP_TIMEOUT_ERR},
		{"IBV_WC_GENERAL_ERR", int64(verbs.WCGeneralErr), C.IBV_WC_GENERAL_ERR},

		// enum ibv_wc_opcode (rdma-core 44 has no IBV_WC_FLUSH: verbs.WCFlush
		// is never reported here).
		{"IBV_WC_SEND", int64(verbs.WCSend), C.IBV_WC_SEND},
		{"IBV_WC_RDMA_WRITE", int64(verbs.WCRDMAWrite), C.IBV_WC_RDMA_WRITE},
		{"IBV_WC_RDMA_READ", int64(verbs.WCRDMARead), C.IBV_WC_RDMA_READ},
		{"IBV_WC_COMP_SWAP", int64(verbs.WCCompSwap), C.IBV_WC_COMP_SWAP},
		{"IBV_WC_FETCH_ADD", int64(verbs.WCFetchAdd), C.IBV_WC_FETCH_ADD},
		{"IBV_WC_BIND_MW", int64(verbs.WCBindMW), C.IBV_WC_BIND_MW},
		{"IBV_WC_LOCAL_INV", int64(verbs.WCLocalInv), C.IBV_WC_LOCAL_INV},
		{"IBV_WC_ATOMIC_WRITE", int64(verbs.WCAtomicWrite), C.IBV_WC_ATOMIC_WRITE},
		{"IBV_WC_RECV", int64(verbs.WCRecv), C.IBV_WC_RECV},
		{"IBV_WC_RECV_RDMA_WITH_IMM", int64(verbs.WCRecvRDMAWithImm), C.IBV_WC_RECV_RDMA_WITH_IMM},

		// enum ibv_wc_flags
		{"IBV_WC_GRH", int64(verbs.WCFlagGRH), C.IBV_WC_GRH},
		{"IBV_WC_WITH_IMM", int64(verbs.WCFlagWithImm), C.IBV_WC_WITH_IMM},
		{"IBV_WC_WITH_INV", int64(verbs.WCFlagWithInv), C.IBV_WC_WITH_INV},

		// enum ibv_wr_opcode (IBV_WR_FLUSH is not in rdma-core 44 either).
		{"IBV_WR_RDMA_WRITE", int64(verbs.WRRDMAWrite), C.IBV_WR_RDMA_WRITE},
		{"IBV_WR_RDMA_WRITE_WITH_IMM", int64(verbs.WRRDMAWriteWithImm), C.IBV_WR_RDMA_WRITE_WITH_IMM},
		{"IBV_WR_SEND", int64(verbs.WRSend), C.IBV_WR_SEND},
		{"IBV_WR_SEND_WITH_IMM", int64(verbs.WRSendWithImm), C.IBV_WR_SEND_WITH_IMM},
		{"IBV_WR_RDMA_READ", int64(verbs.WRRDMARead), C.IBV_WR_RDMA_READ},
		{"IBV_WR_ATOMIC_CMP_AND_SWP", int64(verbs.WRAtomicCmpSwp), C.IBV_WR_ATOMIC_CMP_AND_SWP},
		{"IBV_WR_ATOMIC_FETCH_AND_ADD", int64(verbs.WRAtomicFetchAdd), C.IBV_WR_ATOMIC_FETCH_AND_ADD},
		{"IBV_WR_LOCAL_INV", int64(verbs.WRLocalInv), C.IBV_WR_LOCAL_INV},
		{"IBV_WR_BIND_MW", int64(verbs.WRBindMW), C.IBV_WR_BIND_MW},
		{"IBV_WR_SEND_WITH_INV", int64(verbs.WRSendWithInv), C.IBV_WR_SEND_WITH_INV},
		{"IBV_WR_ATOMIC_WRITE", int64(verbs.WRAtomicWrite), C.IBV_WR_ATOMIC_WRITE},

		// enum ibv_send_flags
		{"IBV_SEND_FENCE", int64(verbs.SendFence), C.IBV_SEND_FENCE},
		{"IBV_SEND_SIGNALED", int64(verbs.SendSignaled), C.IBV_SEND_SIGNALED},
		{"IBV_SEND_SOLICITED", int64(verbs.SendSolicited), C.IBV_SEND_SOLICITED},
		{"IBV_SEND_INLINE", int64(verbs.SendInline), C.IBV_SEND_INLINE},

		// enum ibv_qp_type, ibv_qp_state, ibv_mtu
		{"IBV_QPT_RC", int64(verbs.QPTypeRC), C.IBV_QPT_RC},
		{"IBV_QPT_UC", int64(verbs.QPTypeUC), C.IBV_QPT_UC},
		{"IBV_QPT_UD", int64(verbs.QPTypeUD), C.IBV_QPT_UD},
		{"IBV_QPS_RESET", int64(verbs.QPSReset), C.IBV_QPS_RESET},
		{"IBV_QPS_INIT", int64(verbs.QPSInit), C.IBV_QPS_INIT},
		{"IBV_QPS_RTR", int64(verbs.QPSRTR), C.IBV_QPS_RTR},
		{"IBV_QPS_RTS", int64(verbs.QPSRTS), C.IBV_QPS_RTS},
		{"IBV_QPS_SQD", int64(verbs.QPSSQD), C.IBV_QPS_SQD},
		{"IBV_QPS_SQE", int64(verbs.QPSSQE), C.IBV_QPS_SQE},
		{"IBV_QPS_ERR", int64(verbs.QPSErr), C.IBV_QPS_ERR},
		{"IBV_MTU_256", int64(verbs.MTU256), C.IBV_MTU_256},
		{"IBV_MTU_512", int64(verbs.MTU512), C.IBV_MTU_512},
		{"IBV_MTU_1024", int64(verbs.MTU1024), C.IBV_MTU_1024},
		{"IBV_MTU_2048", int64(verbs.MTU2048), C.IBV_MTU_2048},
		{"IBV_MTU_4096", int64(verbs.MTU4096), C.IBV_MTU_4096},

		// enum ibv_qp_attr_mask
		{"IBV_QP_STATE", int64(verbs.AttrState), C.IBV_QP_STATE},
		{"IBV_QP_CUR_STATE", int64(verbs.AttrCurState), C.IBV_QP_CUR_STATE},
		{"IBV_QP_EN_SQD_ASYNC_NOTIFY", int64(verbs.AttrEnSQDAsyncNotify), C.IBV_QP_EN_SQD_ASYNC_NOTIFY},
		{"IBV_QP_ACCESS_FLAGS", int64(verbs.AttrAccessFlags), C.IBV_QP_ACCESS_FLAGS},
		{"IBV_QP_PKEY_INDEX", int64(verbs.AttrPKeyIndex), C.IBV_QP_PKEY_INDEX},
		{"IBV_QP_PORT", int64(verbs.AttrPort), C.IBV_QP_PORT},
		{"IBV_QP_QKEY", int64(verbs.AttrQKey), C.IBV_QP_QKEY},
		{"IBV_QP_AV", int64(verbs.AttrAV), C.IBV_QP_AV},
		{"IBV_QP_PATH_MTU", int64(verbs.AttrPathMTU), C.IBV_QP_PATH_MTU},
		{"IBV_QP_TIMEOUT", int64(verbs.AttrTimeout), C.IBV_QP_TIMEOUT},
		{"IBV_QP_RETRY_CNT", int64(verbs.AttrRetryCnt), C.IBV_QP_RETRY_CNT},
		{"IBV_QP_RNR_RETRY", int64(verbs.AttrRNRRetry), C.IBV_QP_RNR_RETRY},
		{"IBV_QP_RQ_PSN", int64(verbs.AttrRQPSN), C.IBV_QP_RQ_PSN},
		{"IBV_QP_MAX_QP_RD_ATOMIC", int64(verbs.AttrMaxQPRdAtomic), C.IBV_QP_MAX_QP_RD_ATOMIC},
		{"IBV_QP_ALT_PATH", int64(verbs.AttrAltPath), C.IBV_QP_ALT_PATH},
		{"IBV_QP_MIN_RNR_TIMER", int64(verbs.AttrMinRNRTimer), C.IBV_QP_MIN_RNR_TIMER},
		{"IBV_QP_SQ_PSN", int64(verbs.AttrSQPSN), C.IBV_QP_SQ_PSN},
		{"IBV_QP_MAX_DEST_RD_ATOMIC", int64(verbs.AttrMaxDestRdAtomic), C.IBV_QP_MAX_DEST_RD_ATOMIC},
		{"IBV_QP_PATH_MIG_STATE", int64(verbs.AttrPathMigState), C.IBV_QP_PATH_MIG_STATE},
		{"IBV_QP_CAP", int64(verbs.AttrCap), C.IBV_QP_CAP},
		{"IBV_QP_DEST_QPN", int64(verbs.AttrDestQPN), C.IBV_QP_DEST_QPN},

		// enum ibv_access_flags
		{"IBV_ACCESS_LOCAL_WRITE", int64(memory.LocalWrite), C.IBV_ACCESS_LOCAL_WRITE},
		{"IBV_ACCESS_REMOTE_WRITE", int64(memory.RemoteWrite), C.IBV_ACCESS_REMOTE_WRITE},
		{"IBV_ACCESS_REMOTE_READ", int64(memory.RemoteRead), C.IBV_ACCESS_REMOTE_READ},
		{"IBV_ACCESS_REMOTE_ATOMIC", int64(memory.RemoteAtomic), C.IBV_ACCESS_REMOTE_ATOMIC},
		{"IBV_ACCESS_MW_BIND", int64(memory.MWBind), C.IBV_ACCESS_MW_BIND},
		{"IBV_ACCESS_ZERO_BASED", int64(memory.ZeroBased), C.IBV_ACCESS_ZERO_BASED},

		// enum ibv_event_type
		{"IBV_EVENT_CQ_ERR", int64(verbs.EventCQErr), C.IBV_EVENT_CQ_ERR},
		{"IBV_EVENT_QP_FATAL", int64(verbs.EventQPFatal), C.IBV_EVENT_QP_FATAL},
		{"IBV_EVENT_QP_REQ_ERR", int64(verbs.EventQPReqErr), C.IBV_EVENT_QP_REQ_ERR},
		{"IBV_EVENT_QP_ACCESS_ERR", int64(verbs.EventQPAccessErr), C.IBV_EVENT_QP_ACCESS_ERR},
		{"IBV_EVENT_COMM_EST", int64(verbs.EventCommEst), C.IBV_EVENT_COMM_EST},
		{"IBV_EVENT_SQ_DRAINED", int64(verbs.EventSQDrained), C.IBV_EVENT_SQ_DRAINED},
		{"IBV_EVENT_PORT_ACTIVE", int64(verbs.EventPortActive), C.IBV_EVENT_PORT_ACTIVE},
		{"IBV_EVENT_PORT_ERR", int64(verbs.EventPortErr), C.IBV_EVENT_PORT_ERR},
		{"IBV_EVENT_SRQ_ERR", int64(verbs.EventSRQErr), C.IBV_EVENT_SRQ_ERR},
		{"IBV_EVENT_SRQ_LIMIT_REACHED", int64(verbs.EventSRQLimitReached), C.IBV_EVENT_SRQ_LIMIT_REACHED},
		{"IBV_EVENT_QP_LAST_WQE_REACHED", int64(verbs.EventQPLastWQEReached), C.IBV_EVENT_QP_LAST_WQE_REACHED},

		// enum ibv_port_state, IBV_LINK_LAYER_*, enum ibv_atomic_cap
		{"IBV_PORT_DOWN", int64(verbs.PortDown), C.IBV_PORT_DOWN},
		{"IBV_PORT_INIT", int64(verbs.PortInit), C.IBV_PORT_INIT},
		{"IBV_PORT_ARMED", int64(verbs.PortArmed), C.IBV_PORT_ARMED},
		{"IBV_PORT_ACTIVE", int64(verbs.PortActive), C.IBV_PORT_ACTIVE},
		{"IBV_LINK_LAYER_INFINIBAND", int64(verbs.LinkLayerInfiniBand), C.IBV_LINK_LAYER_INFINIBAND},
		{"IBV_LINK_LAYER_ETHERNET", int64(verbs.LinkLayerEthernet), C.IBV_LINK_LAYER_ETHERNET},
		{"IBV_ATOMIC_NONE", int64(verbs.AtomicNone), C.IBV_ATOMIC_NONE},
		{"IBV_ATOMIC_HCA", int64(verbs.AtomicHCA), C.IBV_ATOMIC_HCA},
		{"IBV_ATOMIC_GLOB", int64(verbs.AtomicGlob), C.IBV_ATOMIC_GLOB},

		// enum ibv_device_cap_flags (those nic names)
		{"IBV_DEVICE_UD_AV_PORT_ENFORCE", int64(verbs.DeviceUDAVPortEnforce), C.IBV_DEVICE_UD_AV_PORT_ENFORCE},
		{"IBV_DEVICE_CURR_QP_STATE_MOD", int64(verbs.DeviceCurrQPStateMod), C.IBV_DEVICE_CURR_QP_STATE_MOD},
		{"IBV_DEVICE_SYS_IMAGE_GUID", int64(verbs.DeviceSysImageGUID), C.IBV_DEVICE_SYS_IMAGE_GUID},
		{"IBV_DEVICE_RC_RNR_NAK_GEN", int64(verbs.DeviceRCRNRNAKGen), C.IBV_DEVICE_RC_RNR_NAK_GEN},
		{"IBV_DEVICE_SRQ_RESIZE", int64(verbs.DeviceSRQResize), C.IBV_DEVICE_SRQ_RESIZE},
		{"IBV_DEVICE_BAD_PKEY_CNTR", int64(verbs.DeviceBadPKeyCntr), C.IBV_DEVICE_BAD_PKEY_CNTR},
		{"IBV_DEVICE_BAD_QKEY_CNTR", int64(verbs.DeviceBadQKeyCntr), C.IBV_DEVICE_BAD_QKEY_CNTR},
		{"IBV_DEVICE_AUTO_PATH_MIG", int64(verbs.DeviceAutoPathMig), C.IBV_DEVICE_AUTO_PATH_MIG},
		{"IBV_DEVICE_CHANGE_PHY_PORT", int64(verbs.DeviceChangePhyPort), C.IBV_DEVICE_CHANGE_PHY_PORT},
		{"IBV_DEVICE_PORT_ACTIVE_EVENT", int64(verbs.DevicePortActiveEvent), C.IBV_DEVICE_PORT_ACTIVE_EVENT},
		{"IBV_DEVICE_MEM_MGT_EXTENSIONS", int64(verbs.DeviceMemMgtExtensions), C.IBV_DEVICE_MEM_MGT_EXTENSIONS},
		{"IBV_DEVICE_MEM_WINDOW", int64(verbs.DeviceMemWindow), C.IBV_DEVICE_MEM_WINDOW},
		{"IBV_DEVICE_MEM_WINDOW_TYPE_2B", int64(verbs.DeviceMemWindowType2B), C.IBV_DEVICE_MEM_WINDOW_TYPE_2B},

		// enum ibv_mig_state
		{"IBV_MIG_MIGRATED", int64(verbs.MigMigrated), C.IBV_MIG_MIGRATED},
		{"IBV_MIG_REARM", int64(verbs.MigRearm), C.IBV_MIG_REARM},
		{"IBV_MIG_ARMED", int64(verbs.MigArmed), C.IBV_MIG_ARMED},
	}
}
