// The TCP/IP side channel through the daemon (ibv.Network): a client's
// Listen and Dial run on the stack that owns the NIC's addresses, the
// daemon's. Each connection reaches the client as one end of a Unix stream
// socketpair (SCM_RIGHTS with the reply that starts it); the daemon copies
// between the other end and the TCP connection, half-closes included.
//
//	NET_QUERY           request Empty           reply Available
//	NET_LISTEN          request NetListenReq    reply NetListenReply
//	NET_CLOSE_LISTENER  request Handle          reply Empty
//	NET_ACCEPT   async  request NetAcceptReq    reply Empty + socket    result NetConnInfo
//	NET_DIAL     async  request NetDialReq      reply Empty + socket    result NetConnInfo
//	NET_CANCEL          request Token           reply Empty
//	NET_RESULT   event  AsyncResult
//
// The socket of an accept or dial that fails is closed by the daemon: the
// client reads EOF from it and the result says why.

package proto

import "net/netip"

// Side-channel ops.
const (
	OpNetQuery         Op = 0x0100
	OpNetListen        Op = 0x0101
	OpNetCloseListener Op = 0x0102
	OpNetAccept        Op = 0x0103
	OpNetDial          Op = 0x0104
	OpNetCancel        Op = 0x0105

	// OpNetResult ends a NET_ACCEPT or NET_DIAL (AsyncResult).
	OpNetResult Op = 0x8100
)

func init() {
	registerOps([]opDecl{
		{OpNetQuery, "NET_QUERY", Bodies{func() Message { return new(Empty) }, func() Message { return new(Available) }}},
		{OpNetListen, "NET_LISTEN", Bodies{func() Message { return new(NetListenReq) }, func() Message { return new(NetListenReply) }}},
		{OpNetCloseListener, "NET_CLOSE_LISTENER", Bodies{func() Message { return new(Handle) }, func() Message { return new(Empty) }}},
		{OpNetAccept, "NET_ACCEPT", Bodies{func() Message { return new(NetAcceptReq) }, func() Message { return new(Empty) }}},
		{OpNetDial, "NET_DIAL", Bodies{func() Message { return new(NetDialReq) }, func() Message { return new(Empty) }}},
		{OpNetCancel, "NET_CANCEL", Bodies{func() Message { return new(Token) }, func() Message { return new(Empty) }}},
		{OpNetResult, "NET_RESULT", Bodies{func() Message { return new(AsyncResult) }, nil}},
	})
}

// NetListenReq listens on an address of the device (or the unspecified
// address: every address of the device).
type NetListenReq struct{ Addr netip.AddrPort }

func (m *NetListenReq) Encode(w *Writer) { w.AddrPort(m.Addr) }
func (m *NetListenReq) Decode(r *Reader) { m.Addr = r.AddrPort() }

// NetListenReply names the listener and where it listens (the port the
// stack picked for port 0).
type NetListenReply struct {
	Listener uint32
	Addr     netip.AddrPort
}

func (m *NetListenReply) Encode(w *Writer) { w.U32(m.Listener); w.AddrPort(m.Addr) }
func (m *NetListenReply) Decode(r *Reader) { m.Listener = r.U32(); m.Addr = r.AddrPort() }

// NetAcceptReq waits for the listener's next connection.
type NetAcceptReq struct {
	Token    uint32
	Listener uint32
}

func (m *NetAcceptReq) Encode(w *Writer) { w.U32(m.Token); w.U32(m.Listener) }
func (m *NetAcceptReq) Decode(r *Reader) { m.Token = r.U32(); m.Listener = r.U32() }

// NetDialReq connects from Local (an address of the device, or invalid
// for the daemon's choice) to Remote.
type NetDialReq struct {
	Token  uint32
	Local  netip.Addr
	Remote netip.AddrPort
}

func (m *NetDialReq) Encode(w *Writer) { w.U32(m.Token); w.Addr(m.Local); w.AddrPort(m.Remote) }
func (m *NetDialReq) Decode(r *Reader) {
	m.Token = r.U32()
	m.Local = r.Addr()
	m.Remote = r.AddrPort()
}

// NetConnInfo is the result of NET_ACCEPT and NET_DIAL: the TCP
// connection's addresses.
type NetConnInfo struct {
	Local, Remote netip.AddrPort
}

func (m *NetConnInfo) Encode(w *Writer) { w.AddrPort(m.Local); w.AddrPort(m.Remote) }
func (m *NetConnInfo) Decode(r *Reader) { m.Local = r.AddrPort(); m.Remote = r.AddrPort() }
