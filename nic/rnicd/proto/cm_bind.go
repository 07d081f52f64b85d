// rdma_bind_addr through the daemon: the rdma_cm port spaces are the
// host's, one for all the daemon's clients and NICs, as the kernel's are
// one per network namespace. A bound port is reserved until CM_UNBIND (or
// the session's end), so a bind of port 0 learns its ephemeral port at
// once (rdma_get_src_port right after rdma_bind_addr) and a second bind
// of a port in use fails with StatusBusy (EADDRINUSE).
//
//	CM_BIND              request CMBindReq        reply CMBindReply
//	CM_UNBIND            request Handle           reply Empty
//
// A daemon without these ops answers StatusUnknownOp; a client then binds
// as before (the port is chosen by CM_LISTEN).

package proto

import "net/netip"

// rdma_cm port reservation ops.
const (
	OpCMBind   Op = 0x020B
	OpCMUnbind Op = 0x020C
)

func init() {
	registerOps([]opDecl{
		{OpCMBind, "CM_BIND", Bodies{func() Message { return new(CMBindReq) }, func() Message { return new(CMBindReply) }}},
		{OpCMUnbind, "CM_UNBIND", Bodies{func() Message { return new(Handle) }, func() Message { return new(Empty) }}},
	})
}

// Port spaces of CMBindReq (rdma_port_space's RDMA_PS_TCP and
// RDMA_PS_UDP: each has its own ports).
const (
	PortSpaceTCP uint8 = 0
	PortSpaceUDP uint8 = 1
)

// CMBindReq reserves Port (0: an ephemeral one) of a port space on Addr
// (the zero Addr: every address, INADDR_ANY).
type CMBindReq struct {
	PortSpace uint8
	Addr      netip.Addr
	Port      uint16
}

func (m *CMBindReq) Encode(w *Writer) { w.U8(m.PortSpace); w.Addr(m.Addr); w.U16(m.Port) }
func (m *CMBindReq) Decode(r *Reader) {
	m.PortSpace = r.U8()
	m.Addr = r.Addr()
	m.Port = r.U16()
}

// CMBindReply names the reservation and its port.
type CMBindReply struct {
	Binding uint32
	Port    uint16
}

func (m *CMBindReply) Encode(w *Writer) { w.U32(m.Binding); w.U16(m.Port) }
func (m *CMBindReply) Decode(r *Reader) { m.Binding = r.U32(); m.Port = r.U16() }
