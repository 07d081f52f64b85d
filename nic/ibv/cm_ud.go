package ibv

import (
	"context"
	"errors"
	"net/netip"

	"github.com/rnic/rnic/nic/verbs"
)

// UD rdma_cm ids (RDMA_PS_UDP) as an optional capability of a
// ConnManager: Service ID Resolution (IBTA §12.11) instead of a
// connection. Nothing binds or moves a QP: the listener answers with its
// UD QP's number and Q_Key, the client addresses its sends with them.

// UDConnManager is implemented by a ConnManager that serves UD ids.
type UDConnManager interface {
	// CMListenUD answers resolution requests for port (rdma_listen on a
	// RDMA_PS_UDP id); 0 picks a free port.
	CMListenUD(port uint16) (CMUDListener, error)
	// CMResolveUD asks the UD listener at addr:port for its QP
	// (rdma_connect on a RDMA_PS_UDP id). A negative answer is an error
	// wrapping ErrUnreachable.
	CMResolveUD(ctx context.Context, addr netip.Addr, port uint16, privateData []byte) (UDPeer, error)
}

// ErrUnreachable is what CMResolveUD's error wraps when the peer has no
// UD listener on the port or rejected the request
// (RDMA_CM_EVENT_UNREACHABLE).
var ErrUnreachable = errors.New("ibv: UD service unreachable")

// UDPeer is a resolved UD peer: RDMA_CM_EVENT_ESTABLISHED's param.ud.
type UDPeer struct {
	QPN, QKey     uint32
	AV            verbs.AddressVector
	PrivateData   []byte
	Local, Remote netip.AddrPort
}

// CMUDListener is a listening UD rdma_cm id.
type CMUDListener interface {
	Port() uint16
	Accept(ctx context.Context) (CMUDRequest, error)
	Close() error
}

// CMUDRequest is a resolution request (RDMA_CM_EVENT_CONNECT_REQUEST on a
// UD listener).
type CMUDRequest interface {
	PrivateData() []byte
	LocalAddr() netip.AddrPort
	RemoteAddr() netip.AddrPort
	// Reject answers "rejected" (rdma_reject).
	Reject(privateData []byte) error
	// Accept answers with qp, a UD QP past RESET, its number and Q_Key
	// (rdma_accept); the server gets no ESTABLISHED.
	Accept(qp QP, privateData []byte) error
}
