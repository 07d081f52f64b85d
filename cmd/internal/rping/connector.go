// The seam between rping and its connection manager (rdma_cm's place in
// the real tool): a device's rdma_cm (cm.go) for iWARP (iw_cm's MPA
// exchange) and RoCEv2 (the IB CM's MADs on QP1) alike, or a test's.

package rping

import (
	"context"
	"net/netip"

	"github.com/rnic/rnic/nic/ibv"
)

// ConnParam is what rdma_connect and rdma_accept take from rping
// (struct rdma_conn_param): rping asks for one RDMA READ each way.
type ConnParam struct {
	// ResponderResources is the IRD: RDMA READs the peer may have
	// outstanding toward us.
	ResponderResources uint16
	// InitiatorDepth is the ORD: RDMA READs we may have outstanding.
	InitiatorDepth uint16
	// PrivateData goes to the peer with the request or the reply.
	PrivateData []byte
}

// rpingConnParam is rping_init_conn_param: responder_resources = 1,
// initiator_depth = 1, no private data.
var rpingConnParam = ConnParam{ResponderResources: 1, InitiatorDepth: 1}

// Connector opens connections between RC QPs of one verbs device.
type Connector interface {
	// Device is the verbs device the QPs are created on.
	Device() ibv.Device
	// Listen listens for connection requests on addr (rdma_bind_addr,
	// rdma_listen).
	Listen(addr netip.AddrPort) (Listener, error)
	// Connect connects qp, which is in INIT, to remote and returns once
	// the connection is established (rdma_connect and the ESTABLISHED
	// event) or has failed.
	Connect(ctx context.Context, qp ibv.QP, remote netip.AddrPort, p ConnParam) (Conn, error)
	// Close releases the connection manager (not the device).
	Close() error
}

// Listener hands out connection requests.
type Listener interface {
	// Accept waits for the next connection request
	// (RDMA_CM_EVENT_CONNECT_REQUEST).
	Accept(ctx context.Context) (Request, error)
	// Addr is the address listened on (with the port chosen for port 0).
	Addr() netip.AddrPort
	Close() error
}

// Request is a peer's connection request.
type Request interface {
	// Remote is the requester's address.
	Remote() netip.AddrPort
	// Accept connects qp (in INIT) to the requester and returns once the
	// connection is established (rdma_accept and the ESTABLISHED event).
	Accept(ctx context.Context, qp ibv.QP, p ConnParam) (Conn, error)
	// Reject refuses the request (rdma_reject).
	Reject() error
}

// Conn is an established connection.
type Conn interface {
	Local() netip.AddrPort
	Remote() netip.AddrPort
	// Disconnect ends the connection in order (rdma_disconnect): the QP
	// moves to ERR, its WRs are flushed, the peer is told.
	Disconnect() error
	// Done is closed when the connection has ended, by either side
	// (RDMA_CM_EVENT_DISCONNECTED).
	Done() <-chan struct{}
}
