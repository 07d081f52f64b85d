// External QPs: ids without a QP of their own (rdma_connect/rdma_accept
// with conn_param.qp_num). The CM sends the REQ or REP with the program's
// QP number and gives it the attributes to move that QP itself; the
// active side's RTU waits for Establish (rdma_establish after
// RDMA_CM_EVENT_CONNECT_RESPONSE).

package rdmacm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/roce/cm"
)

// Response is a REP for an external QP, the connection waiting for
// Establish.
type Response struct {
	conn  *Conn
	attrs ibv.ExternalQPAttrs
}

// ConnectExternal sends a REQ for the program's RC QP qpn (which the CM
// does not move) to addr:port and returns at the REP.
func (c *CM) ConnectExternal(ctx context.Context, qpn uint32, addr netip.Addr, port uint16, privateData []byte, p *ConnParam) (*Response, error) {
	d, err := c.dial(qpn, addr, port, privateData, p)
	if err != nil {
		return nil, err
	}
	r := &Response{conn: d.newConn(nil)}
	onREP := func(ev cm.Event) error {
		if ev.Type != cm.EventREP {
			return r.conn.handle(ev)
		}
		r.conn.privateData = ev.REP.PrivateData
		r.attrs = d.attrs(&ev.REP)
		r.conn.ev.handler(ev)
		return cm.ErrDeferRTU
	}
	id, err := c.m.Connect(d.peer, d.local, d.req, onREP)
	if err != nil {
		return nil, fmt.Errorf("rdmacm: %w", err)
	}
	r.conn.id = id
	if _, err := wait(ctx, r.conn.ev, cm.EventREP); err != nil {
		id.Destroy()
		return nil, err
	}
	return r, nil
}

// QPAttrs are the external QP's RTR and RTS attributes from the REP.
func (r *Response) QPAttrs() ibv.ExternalQPAttrs { return r.attrs }

// PrivateData is the REP's private data (196 bytes, zero padded).
func (r *Response) PrivateData() []byte        { return r.conn.privateData }
func (r *Response) LocalAddr() netip.AddrPort  { return r.conn.local }
func (r *Response) RemoteAddr() netip.AddrPort { return r.conn.remote }
func (r *Response) RemoteQPN() uint32          { return r.conn.id.RemoteQPN() }

// Establish sends the RTU: the connection is up.
func (r *Response) Establish() (*Conn, error) {
	if err := r.conn.id.Establish(); err != nil {
		return nil, fmt.Errorf("rdmacm: %w", err)
	}
	return r.conn, nil
}

// Abort rejects the REP and forgets the connection.
func (r *Response) Abort() {
	r.conn.id.Reject(cm.RejConsumerReject, nil, nil)
	r.conn.id.Destroy()
}

// QPAttrs are the RTR and RTS attributes of the external QP that will
// accept the request, with the REQ's parameters (its initiator depth as
// our responder resources and the other way round, as rdma_cm takes them
// before rdma_accept); the REP will announce their RQPSN.
func (r *Request) QPAttrs() (ibv.ExternalQPAttrs, error) {
	if r.extPSN == 0 {
		r.extPSN = rand.Uint32()&0xFFFFFF | 1<<24 // bit 24: chosen (PSNs are 24 bits)
	}
	cp := ConnParam{ResponderResources: r.req.InitiatorDepth, InitiatorDepth: r.req.ResponderResources}
	return r.qpAttrs(cp, r.extPSN&0xFFFFFF)
}

// AcceptExternal sends the REP for the program's QP qpn, which it moved to
// RTR (or RTS) with QPAttrs, and waits for the RTU. p may be nil.
func (r *Request) AcceptExternal(ctx context.Context, qpn uint32, privateData []byte, p *ConnParam) (*Conn, error) {
	if r.answered {
		return nil, fmt.Errorf("rdmacm: request already answered")
	}
	if len(privateData) > cm.REPPrivateDataLen {
		return nil, fmt.Errorf("rdmacm: %d bytes of private data, at most %d", len(privateData), cm.REPPrivateDataLen)
	}
	a, err := r.QPAttrs()
	if err != nil {
		r.answered = true
		r.id.Reject(cm.RejInvalidGID, nil, nil)
		return nil, err
	}
	r.answered = true
	cp := p.withDefaults()
	a.MaxDestRdAtomic, a.MaxRdAtomic = min(cp.ResponderResources, r.req.InitiatorDepth), min(cp.InitiatorDepth, r.req.ResponderResources)
	return r.answer(ctx, nil, qpn, a.RQPSN, a, cp, privateData)
}
