//go:build verbs

// Conversions between nic/verbs types and libibverbs structs. The numbers
// are libibverbs' on both sides (enums.go proves it), so these copy fields;
// only the address vector needs care: RoCE addresses by GID, so every
// ibv_ah_attr is global.

package passthrough

/*
#include "shim.h"
*/
import "C"

import (
	"net/netip"
	"unsafe"

	"github.com/rnic/rnic/nic/verbs"
)

// ahAttrFromAV fills an ibv_ah_attr from av; port is used when av names
// none.
func ahAttrFromAV(av *verbs.AddressVector, port uint8, out *C.struct_ibv_ah_attr) {
	*out = C.struct_ibv_ah_attr{}
	gid := verbs.GIDFromAddr(av.DGID)
	if gid.IsValid() {
		*(*[16]byte)(unsafe.Pointer(&out.grh.dgid)) = gid.As16()
	}
	out.grh.flow_label = C.uint32_t(av.FlowLabel)
	out.grh.sgid_index = C.uint8_t(av.SGIDIndex)
	out.grh.hop_limit = C.uint8_t(av.HopLimit)
	out.grh.traffic_class = C.uint8_t(av.TrafficClass)
	out.sl = C.uint8_t(av.SL)
	out.is_global = 1
	out.port_num = C.uint8_t(av.PortNum)
	if out.port_num == 0 {
		out.port_num = C.uint8_t(max(port, 1))
	}
}

func avFromAHAttr(a *C.struct_ibv_ah_attr) verbs.AddressVector {
	av := verbs.AddressVector{
		SL:      uint8(a.sl),
		PortNum: uint8(a.port_num),
	}
	if a.is_global != 0 {
		av.DGID = netip.AddrFrom16(*(*[16]byte)(unsafe.Pointer(&a.grh.dgid)))
		av.FlowLabel = uint32(a.grh.flow_label)
		av.SGIDIndex = uint8(a.grh.sgid_index)
		av.HopLimit = uint8(a.grh.hop_limit)
		av.TrafficClass = uint8(a.grh.traffic_class)
	}
	return av
}

func capToC(c verbs.QPCap) C.struct_ibv_qp_cap {
	return C.struct_ibv_qp_cap{
		max_send_wr:     C.uint32_t(c.MaxSendWR),
		max_recv_wr:     C.uint32_t(c.MaxRecvWR),
		max_send_sge:    C.uint32_t(c.MaxSendSGE),
		max_recv_sge:    C.uint32_t(c.MaxRecvSGE),
		max_inline_data: C.uint32_t(c.MaxInlineData),
	}
}

func capFromC(c *C.struct_ibv_qp_cap) verbs.QPCap {
	return verbs.QPCap{
		MaxSendWR:     uint32(c.max_send_wr),
		MaxRecvWR:     uint32(c.max_recv_wr),
		MaxSendSGE:    uint32(c.max_send_sge),
		MaxRecvSGE:    uint32(c.max_recv_sge),
		MaxInlineData: uint32(c.max_inline_data),
	}
}

// qpAttrToC fills an ibv_qp_attr from a; libibverbs reads only the fields
// the mask names, so all are copied.
func qpAttrToC(a *verbs.QPAttr, out *C.struct_ibv_qp_attr) {
	*out = C.struct_ibv_qp_attr{}
	out.qp_state = C.enum_ibv_qp_state(a.State)
	out.cur_qp_state = C.enum_ibv_qp_state(a.CurState)
	out.path_mtu = C.enum_ibv_mtu(a.PathMTU)
	out.qkey = C.uint32_t(a.QKey)
	out.rq_psn = C.uint32_t(a.RQPSN)
	out.sq_psn = C.uint32_t(a.SQPSN)
	out.dest_qp_num = C.uint32_t(a.DestQPN)
	out.qp_access_flags = C.uint(a.AccessFlags)
	out.cap = capToC(a.Cap)
	ahAttrFromAV(&a.AV, a.PortNum, &out.ah_attr)
	out.pkey_index = C.uint16_t(a.PKeyIndex)
	if a.SQDrainNotify {
		out.en_sqd_async_notify = 1
	}
	out.max_rd_atomic = C.uint8_t(a.MaxRdAtomic)
	out.max_dest_rd_atomic = C.uint8_t(a.MaxDestRdAtomic)
	out.min_rnr_timer = C.uint8_t(a.MinRNRTimer)
	out.port_num = C.uint8_t(a.PortNum)
	out.timeout = C.uint8_t(a.Timeout)
	out.retry_cnt = C.uint8_t(a.RetryCnt)
	out.rnr_retry = C.uint8_t(a.RNRRetry)
	out.path_mig_state = C.enum_ibv_mig_state(a.PathMigState)
}

func qpAttrFromC(a *C.struct_ibv_qp_attr) verbs.QPAttr {
	return verbs.QPAttr{
		State:           verbs.QPState(a.qp_state),
		CurState:        verbs.QPState(a.cur_qp_state),
		PathMTU:         verbs.MTU(a.path_mtu),
		QKey:            uint32(a.qkey),
		RQPSN:           uint32(a.rq_psn),
		SQPSN:           uint32(a.sq_psn),
		DestQPN:         uint32(a.dest_qp_num),
		AccessFlags:     verbs.Access(a.qp_access_flags),
		Cap:             capFromC(&a.cap),
		AV:              avFromAHAttr(&a.ah_attr),
		PKeyIndex:       uint16(a.pkey_index),
		SQDrainNotify:   a.en_sqd_async_notify != 0,
		MaxRdAtomic:     uint8(a.max_rd_atomic),
		MaxDestRdAtomic: uint8(a.max_dest_rd_atomic),
		MinRNRTimer:     uint8(a.min_rnr_timer),
		PortNum:         uint8(a.port_num),
		Timeout:         uint8(a.timeout),
		RetryCnt:        uint8(a.retry_cnt),
		RNRRetry:        uint8(a.rnr_retry),
		PathMigState:    verbs.MigState(a.path_mig_state),
	}
}
