// rdma_cm through the daemon (ibv.ConnManager): the daemon runs the CM of
// its NIC (one for all its clients) and binds the client's QPs, named by
// handle; the CM moves them to RTS, and to ERR on a disconnect. Listeners,
// requests and connections are handles of the client's connection.
//
//	CM_QUERY             request Empty            reply Available
//	CM_LISTEN            request CMListenReq      reply CMListenReply
//	CM_CLOSE_LISTENER    request Handle           reply Empty
//	CM_GET_REQUEST async request CMGetRequestReq  reply Empty   result CMRequestInfo
//	CM_REJECT            request CMRejectReq      reply Empty
//	CM_ACCEPT      async request CMAcceptReq      reply Empty   result CMConnInfo
//	CM_CONNECT     async request CMConnectReq     reply Empty   result CMConnInfo
//	CM_DISCONNECT  async request CMDisconnectReq  reply Empty   result Empty
//	CM_CANCEL            request Token            reply Empty
//	CM_RESULT      event AsyncResult
//	CM_DISCONNECTED event Handle (the connection): it is down, its QP in
//	                     ERR; the handle is gone
//
// A peer's reject fails CM_CONNECT with StatusRejected; the result's body
// is then a CMRejectInfo (the REJ's reason and private data), when the
// device's CM reports them (ibv.RejectDetail).

package proto

import (
	"net/netip"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
)

// rdma_cm ops.
const (
	OpCMQuery         Op = 0x0200
	OpCMListen        Op = 0x0201
	OpCMCloseListener Op = 0x0202
	OpCMGetRequest    Op = 0x0203
	OpCMReject        Op = 0x0204
	OpCMAccept        Op = 0x0205
	OpCMConnect       Op = 0x0206
	OpCMDisconnect    Op = 0x0207
	OpCMCancel        Op = 0x0208

	// OpCMResult ends an asynchronous CM request (AsyncResult).
	OpCMResult Op = 0x8200
	// OpCMDisconnected says a connection is down (Handle).
	OpCMDisconnected Op = 0x8201
)

// MaxPrivateData bounds private data (a REP's 196 bytes are the most
// rdma_cm carries).
//
//rnicd:cheader
const MaxPrivateData = 196

func init() {
	registerOps([]opDecl{
		{OpCMQuery, "CM_QUERY", Bodies{func() Message { return new(Empty) }, func() Message { return new(Available) }}},
		{OpCMListen, "CM_LISTEN", Bodies{func() Message { return new(CMListenReq) }, func() Message { return new(CMListenReply) }}},
		{OpCMCloseListener, "CM_CLOSE_LISTENER", Bodies{func() Message { return new(Handle) }, func() Message { return new(Empty) }}},
		{OpCMGetRequest, "CM_GET_REQUEST", Bodies{func() Message { return new(CMGetRequestReq) }, func() Message { return new(Empty) }}},
		{OpCMReject, "CM_REJECT", Bodies{func() Message { return new(CMRejectReq) }, func() Message { return new(Empty) }}},
		{OpCMAccept, "CM_ACCEPT", Bodies{func() Message { return new(CMAcceptReq) }, func() Message { return new(Empty) }}},
		{OpCMConnect, "CM_CONNECT", Bodies{func() Message { return new(CMConnectReq) }, func() Message { return new(Empty) }}},
		{OpCMDisconnect, "CM_DISCONNECT", Bodies{func() Message { return new(CMDisconnectReq) }, func() Message { return new(Empty) }}},
		{OpCMCancel, "CM_CANCEL", Bodies{func() Message { return new(Token) }, func() Message { return new(Empty) }}},
		{OpCMResult, "CM_RESULT", Bodies{func() Message { return new(AsyncResult) }, nil}},
		{OpCMDisconnected, "CM_DISCONNECTED", Bodies{func() Message { return new(Handle) }, nil}},
	})
}

// CMListenReq listens on an rdma_cm port (0: the CM picks one).
type CMListenReq struct{ Port uint16 }

func (m *CMListenReq) Encode(w *Writer) { w.U16(m.Port) }
func (m *CMListenReq) Decode(r *Reader) { m.Port = r.U16() }

// CMListenReply names the listener and its port.
type CMListenReply struct {
	Listener uint32
	Port     uint16
}

func (m *CMListenReply) Encode(w *Writer) { w.U32(m.Listener); w.U16(m.Port) }
func (m *CMListenReply) Decode(r *Reader) { m.Listener = r.U32(); m.Port = r.U16() }

// CMGetRequestReq waits for the listener's next connection request.
type CMGetRequestReq struct {
	Token    uint32
	Listener uint32
}

func (m *CMGetRequestReq) Encode(w *Writer) { w.U32(m.Token); w.U32(m.Listener) }
func (m *CMGetRequestReq) Decode(r *Reader) { m.Token = r.U32(); m.Listener = r.U32() }

// CMRequestInfo is a connection request: CM_GET_REQUEST's result. It ends
// with the request's connection parameters from the listener's side
// (ibv.CMRequest.Param): responder resources, initiator depth, retry
// count, RNR retry count, a byte each.
type CMRequestInfo struct {
	Request       uint32
	PrivateData   []byte
	Local, Remote netip.AddrPort
	Param         ibv.ConnParam // the four counts only
}

func (m *CMRequestInfo) Encode(w *Writer) {
	w.U32(m.Request)
	w.Blob(m.PrivateData)
	w.AddrPort(m.Local)
	w.AddrPort(m.Remote)
	p := &m.Param
	w.U8(p.ResponderResources)
	w.U8(p.InitiatorDepth)
	w.U8(p.RetryCount)
	w.U8(p.RNRRetryCount)
}

func (m *CMRequestInfo) Decode(r *Reader) {
	m.Request = r.U32()
	m.PrivateData = r.Blob(MaxPrivateData)
	m.Local = r.AddrPort()
	m.Remote = r.AddrPort()
	p := &m.Param
	p.ResponderResources = r.U8()
	p.InitiatorDepth = r.U8()
	p.RetryCount = r.U8()
	p.RNRRetryCount = r.U8()
}

// CMRejectReq refuses a request.
type CMRejectReq struct {
	Request     uint32
	PrivateData []byte
}

func (m *CMRejectReq) Encode(w *Writer) { w.U32(m.Request); w.Blob(m.PrivateData) }
func (m *CMRejectReq) Decode(r *Reader) { m.Request = r.U32(); m.PrivateData = r.Blob(MaxPrivateData) }

// connParamExact is the bit of rdma_conn_param's access word that carries
// ibv.ConnParam.ExactIRDORD (access flags take the low bits): set, the
// IRD/ORD bytes are taken as given, 0 included; clear (older clients, the
// C library), 0 means rdma_cm's default of 1.
const connParamExact = 1 << 31

// PutConnParam writes rdma_conn_param.
func PutConnParam(w *Writer, p *ibv.ConnParam) {
	w.U8(p.ResponderResources)
	w.U8(p.InitiatorDepth)
	w.U8(p.RetryCount)
	w.U8(p.RNRRetryCount)
	access := uint32(p.Access) &^ connParamExact
	if p.ExactIRDORD {
		access |= connParamExact
	}
	w.U32(access)
	w.U8(p.ACKTimeout)
}

// GetConnParam reads what PutConnParam wrote.
func GetConnParam(r *Reader, p *ibv.ConnParam) {
	p.ResponderResources = r.U8()
	p.InitiatorDepth = r.U8()
	p.RetryCount = r.U8()
	p.RNRRetryCount = r.U8()
	access := r.U32()
	p.ExactIRDORD = access&connParamExact != 0
	p.Access = memory.Access(access &^ connParamExact)
	p.ACKTimeout = r.U8()
}

// CMAcceptReq binds the QP and accepts the request. A zero Param takes
// rdma_cm's defaults.
type CMAcceptReq struct {
	Token       uint32
	Request     uint32
	QP          uint32
	PrivateData []byte
	Param       ibv.ConnParam
}

func (m *CMAcceptReq) Encode(w *Writer) {
	w.U32(m.Token)
	w.U32(m.Request)
	w.U32(m.QP)
	w.Blob(m.PrivateData)
	PutConnParam(w, &m.Param)
}

func (m *CMAcceptReq) Decode(r *Reader) {
	m.Token = r.U32()
	m.Request = r.U32()
	m.QP = r.U32()
	m.PrivateData = r.Blob(MaxPrivateData)
	GetConnParam(r, &m.Param)
}

// CMConnectReq connects the QP to the listener at Addr:Port.
type CMConnectReq struct {
	Token       uint32
	QP          uint32
	Addr        netip.Addr
	Port        uint16
	PrivateData []byte
	Param       ibv.ConnParam
}

func (m *CMConnectReq) Encode(w *Writer) {
	w.U32(m.Token)
	w.U32(m.QP)
	w.Addr(m.Addr)
	w.U16(m.Port)
	w.Blob(m.PrivateData)
	PutConnParam(w, &m.Param)
}

func (m *CMConnectReq) Decode(r *Reader) {
	m.Token = r.U32()
	m.QP = r.U32()
	m.Addr = r.Addr()
	m.Port = r.U16()
	m.PrivateData = r.Blob(MaxPrivateData)
	GetConnParam(r, &m.Param)
}

// CMConnInfo is an established connection: the result of CM_ACCEPT and
// CM_CONNECT.
type CMConnInfo struct {
	Conn          uint32
	PrivateData   []byte
	Local, Remote netip.AddrPort
	RemoteQPN     uint32
}

func (m *CMConnInfo) Encode(w *Writer) {
	w.U32(m.Conn)
	w.Blob(m.PrivateData)
	w.AddrPort(m.Local)
	w.AddrPort(m.Remote)
	w.U32(m.RemoteQPN)
}

func (m *CMConnInfo) Decode(r *Reader) {
	m.Conn = r.U32()
	m.PrivateData = r.Blob(MaxPrivateData)
	m.Local = r.AddrPort()
	m.Remote = r.AddrPort()
	m.RemoteQPN = r.U32()
}

// CMDisconnectReq disconnects a connection.
type CMDisconnectReq struct {
	Token uint32
	Conn  uint32
}

func (m *CMDisconnectReq) Encode(w *Writer) { w.U32(m.Token); w.U32(m.Conn) }
func (m *CMDisconnectReq) Decode(r *Reader) { m.Token = r.U32(); m.Conn = r.U32() }

// MaxRejectPrivateData bounds a REJ's private data (IBTA 12.6.7: 148
// bytes).
//
//rnicd:cheader
const MaxRejectPrivateData = 148

// CMRejectInfo is the body of a CM_CONNECT result with StatusRejected:
// the REJ's reason (IBTA table 112) and private data.
type CMRejectInfo struct {
	Reason      uint16
	PrivateData []byte
}

func (m *CMRejectInfo) Encode(w *Writer) { w.U16(m.Reason); w.Blob(m.PrivateData) }
func (m *CMRejectInfo) Decode(r *Reader) {
	m.Reason = r.U16()
	m.PrivateData = r.Blob(MaxRejectPrivateData)
}
