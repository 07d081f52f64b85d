// UD rdma_cm ids (RDMA_PS_UDP, ibv.UDConnManager): Service ID Resolution
// instead of a connection.
//
//	CM_LISTEN_UD         request CMListenReq      reply CMListenReply
//	CM_RESOLVE_UD  async request CMResolveUDReq   reply Empty   result CMUDPeerInfo
//
// A UD listener's handle serves CM_GET_REQUEST and CM_CLOSE_LISTENER as a
// connected one's; its requests are answered with CM_REJECT and
// CM_ACCEPT, whose result is then Empty (the server gets no ESTABLISHED).
// A negative SIDR_REP fails CM_RESOLVE_UD with StatusUnreachable and a
// CMRejectInfo body whose Reason is the SIDR status (IBTA table 120).

package proto

import (
	"net/netip"

	"github.com/rnic/rnic/nic/verbs"
)

// UD rdma_cm ops.
const (
	OpCMListenUD  Op = 0x0209
	OpCMResolveUD Op = 0x020A
)

func init() {
	registerOps([]opDecl{
		{OpCMListenUD, "CM_LISTEN_UD", Bodies{func() Message { return new(CMListenReq) }, func() Message { return new(CMListenReply) }}},
		{OpCMResolveUD, "CM_RESOLVE_UD", Bodies{func() Message { return new(CMResolveUDReq) }, func() Message { return new(Empty) }}},
	})
}

// CMResolveUDReq resolves the UD listener at Addr:Port.
type CMResolveUDReq struct {
	Token       uint32
	Addr        netip.Addr
	Port        uint16
	PrivateData []byte
}

func (m *CMResolveUDReq) Encode(w *Writer) {
	w.U32(m.Token)
	w.Addr(m.Addr)
	w.U16(m.Port)
	w.Blob(m.PrivateData)
}

func (m *CMResolveUDReq) Decode(r *Reader) {
	m.Token = r.U32()
	m.Addr = r.Addr()
	m.Port = r.U16()
	m.PrivateData = r.Blob(MaxPrivateData)
}

// CMUDPeerInfo is CM_RESOLVE_UD's result: RDMA_CM_EVENT_ESTABLISHED's
// param.ud (the peer's QPN and Q_Key, the route's address vector) and the
// SIDR_REP's private data.
type CMUDPeerInfo struct {
	QPN, QKey     uint32
	PrivateData   []byte
	Local, Remote netip.AddrPort
	AV            verbs.AddressVector
}

func (m *CMUDPeerInfo) Encode(w *Writer) {
	w.U32(m.QPN)
	w.U32(m.QKey)
	w.Blob(m.PrivateData)
	w.AddrPort(m.Local)
	w.AddrPort(m.Remote)
	w.Addr(m.AV.DGID)
	w.U8(m.AV.SGIDIndex)
	w.U8(m.AV.HopLimit)
	w.U8(m.AV.TrafficClass)
	w.U32(m.AV.FlowLabel)
}

func (m *CMUDPeerInfo) Decode(r *Reader) {
	m.QPN = r.U32()
	m.QKey = r.U32()
	m.PrivateData = r.Blob(MaxPrivateData)
	m.Local = r.AddrPort()
	m.Remote = r.AddrPort()
	m.AV.DGID = r.Addr()
	m.AV.SGIDIndex = r.U8()
	m.AV.HopLimit = r.U8()
	m.AV.TrafficClass = r.U8()
	m.AV.FlowLabel = r.U32()
	m.AV.PortNum = 1
}
