// rdma_cm with an external QP: a program that makes its own RC QP and
// connects it through an id without one (rdma_connect and rdma_accept
// with conn_param.qp_num, id->qp NULL). The CM sends the REQ or REP with
// that QP's number but never moves the QP: it gives the program the
// attributes for RTR and RTS (rdma_init_qp_attr), and the active side
// sends its RTU only when the program says its QP is ready
// (RDMA_CM_EVENT_CONNECT_RESPONSE, then rdma_establish).

package ibv

import (
	"context"
	"net/netip"

	"github.com/rnic/rnic/nic/verbs"
)

// ExternalQPAttrs are the attributes rdma_init_qp_attr gives an external
// QP: for RTR the path (AV, PathMTU), DestQPN, RQPSN, MaxDestRdAtomic and
// MinRNRTimer; for RTS SQPSN, Timeout, RetryCnt, RNRRetry and
// MaxRdAtomic.
type ExternalQPAttrs struct {
	AV              verbs.AddressVector
	PathMTU         verbs.MTU
	DestQPN         uint32
	RQPSN, SQPSN    uint32
	MaxDestRdAtomic uint8
	MaxRdAtomic     uint8
	MinRNRTimer     uint8
	Timeout         uint8
	RetryCnt        uint8
	RNRRetry        uint8
}

// ExternalConnManager is implemented by a ConnManager that connects
// external QPs, named by their QP number on the same device.
type ExternalConnManager interface {
	// CMConnectExternal sends a REQ for QP qpn and returns at the REP.
	CMConnectExternal(ctx context.Context, qpn uint32, addr netip.Addr, port uint16, privateData []byte, p *ConnParam) (CMResponse, error)
}

// CMResponse is a REP received for an external QP: its connection waits
// for Establish.
type CMResponse interface {
	// PrivateData is the REP's; RemoteQPN the peer's QP.
	PrivateData() []byte
	LocalAddr() netip.AddrPort
	RemoteAddr() netip.AddrPort
	RemoteQPN() uint32
	QPAttrs() ExternalQPAttrs
	// Establish sends the RTU (rdma_establish).
	Establish() (CMConn, error)
	// Abort rejects the REP (the program gave up before Establish).
	Abort()
}

// ExternalCMRequest is implemented by a CMRequest that an external QP can
// accept.
type ExternalCMRequest interface {
	// QPAttrs are the attributes for the QP that will accept: its RQPSN
	// is the Starting PSN its REP will carry.
	QPAttrs() ExternalQPAttrs
	// AcceptExternal sends the REP for QP qpn (in RTR or RTS already)
	// and returns at the RTU.
	AcceptExternal(ctx context.Context, qpn uint32, privateData []byte, p *ConnParam) (CMConn, error)
}
