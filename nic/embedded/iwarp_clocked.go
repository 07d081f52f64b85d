// The iWARP NIC's connection manager for a caller that drives a virtual
// clock itself (rnic sim): ibv.ConnManager's calls wait in real time for
// the connection, which on a virtual clock only the caller's own Run
// brings about. These hand the request and the outcome to callbacks that
// run on the engine's side (inside the clock's Run), and return at once.

package embedded

import (
	"io"
	"net/netip"

	"github.com/rnic/rnic/iwarp"
)

// MPARequest is an MPA Request waiting for Accept or Reject (ListenFunc).
type MPARequest struct{ r *iwarp.ConnRequest }

// PrivateData is the initiator's private data.
func (r MPARequest) PrivateData() []byte { return r.r.PrivateData }

// Accept binds QP qpn (in INIT) and sends the MPA Reply with our IRD and
// ORD.
func (r MPARequest) Accept(qpn uint32, privateData []byte, ird, ord uint16) error {
	return r.r.Accept(qpn, privateData, ird, ord)
}

// Reject answers with an MPA Reply that rejects.
func (r MPARequest) Reject(privateData []byte) error { return r.r.Reject(privateData) }

// ListenFunc listens on port of the NIC's address; onRequest must answer
// each request before it returns. It returns the listener and its
// address.
func (n *IWARPNIC) ListenFunc(port uint16, onRequest func(MPARequest)) (io.Closer, netip.AddrPort, error) {
	l, err := n.Stack.Listen(netip.AddrPortFrom(n.Addr, port), func(r *iwarp.ConnRequest) { onRequest(MPARequest{r}) })
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	return l, l.Addr(), nil
}

// ConnectFunc starts connecting QP qpn (in INIT) to remote with
// privateData and our IRD and ORD; done is told nil once the connection
// is established (the QP in RTS), else why it failed.
func (n *IWARPNIC) ConnectFunc(qpn uint32, remote netip.AddrPort, privateData []byte, ird, ord uint16, done func(error)) error {
	return n.Stack.Connect(qpn, remote, privateData, ird, ord, func(r iwarp.ConnectResult) { done(r.Err) })
}
