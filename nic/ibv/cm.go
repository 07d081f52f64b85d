// The RDMA connection manager (rdma_cm) as an optional capability: a
// Device that runs it over its own port (QP1 MADs on RoCEv2, MPA over TCP
// on iWARP) implements ConnManager. Connections bind QPs the program
// created on the same Device; the CM moves them to RTS and, on disconnect,
// to ERR, as rdma_cm does.

package ibv

import (
	"context"
	"errors"
	"net/netip"

	"github.com/rnic/rnic/memory"
)

// ErrRejected is what CMConnect's error wraps when the peer rejected the
// connection (RDMA_CM_EVENT_REJECTED).
var ErrRejected = errors.New("ibv: connection rejected by the peer")

// RejectNoListener is the reject reason (IBTA Vol 1 table 112, "invalid
// service ID") a CM reports when nobody listens on the port: a REJ for an
// unknown service ID on RoCEv2, a refused TCP connection on iWARP.
const RejectNoListener = 8

// RejectDetail is implemented by a CM's rejection error that knows the
// REJ: its reason (IBTA table 112) and private data, which rdma_cm hands
// to the program with RDMA_CM_EVENT_REJECTED.
type RejectDetail interface {
	RejectReason() uint16
	RejectPrivateData() []byte
}

// ConnParam are the connection parameters (struct rdma_conn_param); zero
// fields take rdma_cm's defaults (IRD/ORD 1, retries 7, remote
// READ/WRITE/atomic access).
type ConnParam struct {
	ResponderResources uint8
	InitiatorDepth     uint8
	RetryCount         uint8
	RNRRetryCount      uint8
	Access             memory.Access
	// ExactIRDORD takes ResponderResources and InitiatorDepth as given,
	// 0 included, as rdma_cm does with a program's conn_param: perftest's
	// rdma_cm mode asks for 0 on connections that make no READs, and
	// siw's MPA frames carry 0 (testdata/captures/siw-*-bw-4096.pcap).
	// The iWARP CM honours it.
	ExactIRDORD bool
	// ACKTimeout is the QP's local ACK timeout at RTS (4.096 µs ×
	// 2^ACKTimeout), rdma_set_option's RDMA_OPTION_ID_ACK_TIMEOUT; 0 keeps
	// the CM's own, from the path's packet life time. The RoCE CM honours
	// it; iWARP has no such timer (TCP retransmits).
	ACKTimeout uint8
}

// ConnManager is implemented by a Device that offers rdma_cm.
type ConnManager interface {
	// CMListen listens for connection requests on port (rdma_listen); port
	// 0 picks a free one, as rdma_bind_addr does. A port that has a
	// listener already gives an error wrapping verbs.ErrBusy (rdma_listen's
	// EADDRINUSE).
	CMListen(port uint16) (CMListener, error)
	// CMConnect connects qp (an RC QP in RESET, or in INIT with receives
	// posted, as after rdma_create_qp) to a listener at
	// addr:port (rdma_resolve_addr/route + rdma_connect), returning once
	// the connection is established.
	CMConnect(ctx context.Context, qp QP, addr netip.Addr, port uint16, privateData []byte, p *ConnParam) (CMConn, error)
}

// CMListener is a listening rdma_cm ID.
type CMListener interface {
	Port() uint16
	// Accept waits for the next connection request.
	Accept(ctx context.Context) (CMRequest, error)
	Close() error
}

// CMRequest is a connection request (RDMA_CM_EVENT_CONNECT_REQUEST).
type CMRequest interface {
	PrivateData() []byte
	LocalAddr() netip.AddrPort
	RemoteAddr() netip.AddrPort
	// Param is the request's connection parameters as this side sees
	// them, as RDMA_CM_EVENT_CONNECT_REQUEST's param.conn carries them:
	// ResponderResources is the peer's initiator depth (the READs it may
	// have outstanding toward us), InitiatorDepth the peer's responder
	// resources, as ib_cm and iw_cm report them; the retry counts are
	// the REQ's (zero over iWARP, which has none).
	Param() ConnParam
	// Reject refuses the request (rdma_reject).
	Reject(privateData []byte) error
	// Accept binds qp (an RC QP in RESET, or in INIT with receives
	// posted) and accepts (rdma_accept),
	// returning once the connection is established.
	Accept(ctx context.Context, qp QP, privateData []byte, p *ConnParam) (CMConn, error)
}

// CMAcceptPreparer is implemented by a CMRequest that moves the accepting
// QP to RTS apart from Accept, as librdmacm's rdma_accept does before it
// returns (the REP and the wait for the RTU come after): a program that
// queries its QP once rdma_accept returned sees its RTS attributes. Accept
// with the same QP and parameters then sends the REP.
type CMAcceptPreparer interface {
	PrepareAccept(qp QP, p *ConnParam) error
}

// CMConn is an established connection.
type CMConn interface {
	QP() QP
	// PrivateData is what the peer sent with its REQ or REP.
	PrivateData() []byte
	LocalAddr() netip.AddrPort
	RemoteAddr() netip.AddrPort
	RemoteQPN() uint32
	// Done is closed when the connection is down (either side
	// disconnected); the QP is then in ERR.
	Done() <-chan struct{}
	// Disconnect disconnects (rdma_disconnect) and waits for the peer's
	// answer or ctx.
	Disconnect(ctx context.Context) error
}
