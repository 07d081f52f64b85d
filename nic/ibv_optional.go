// The optional interfaces of the verbs API that an AsIBV device's objects
// implement: CQ resize, MR re-registration, SRQ limits, QP state watching,
// and UD rdma_cm ids when the ConnManager serves them.

package nic

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

var (
	_ ibv.ResizeCQ      = (*ibvCQ)(nil)
	_ ibv.ReregMR       = (*ibvMR)(nil)
	_ ibv.SRQModifier   = (*ibvSRQ)(nil)
	_ ibv.StateWatcher  = (*ibvQP)(nil)
	_ ibv.McastQP       = (*ibvQP)(nil)
	_ ibv.UDConnManager = (*ibvCM)(nil)
	_ ibv.UDConnManager = (*ibvNetCM)(nil)
)

func (c *ibvCQ) Resize(cqe int) error { return c.cq.Resize(cqe) }

func (m *ibvMR) Rereg(pd ibv.PD, buf []byte, iova uint64, access memory.Access) error {
	c := MRChange{Buf: buf, IOVA: iova, Access: access}
	if pd != nil {
		p, ok := pd.(*ibvPD)
		if !ok || p.d != m.d {
			return ibv.ErrForeign
		}
		c.PD = p.pd
	}
	return m.d.ReregMR(m.mr, c)
}

func (s *ibvSRQ) ModifySRQ(attr verbs.SRQAttr, mask verbs.SRQAttrMask) error {
	return s.srq.ModifySRQ(attr, mask)
}

func (s *ibvSRQ) QuerySRQ() verbs.SRQAttr { return s.srq.Query() }

func (q *ibvQP) WatchState(f func(verbs.QPState)) { q.qp.WatchState(f) }

func (q *ibvQP) AttachMcast(gid netip.Addr, lid uint16) error { return q.qp.AttachMcast(gid, lid) }

func (q *ibvQP) DetachMcast(gid netip.Addr, lid uint16) error { return q.qp.DetachMcast(gid, lid) }

// The wrappers with a ConnManager forward the UD methods to it; one
// without UD ids refuses them with verbs.ErrNotSupported.

func listenUD(c ibv.ConnManager, port uint16) (ibv.CMUDListener, error) {
	if u, ok := c.(ibv.UDConnManager); ok {
		return u.CMListenUD(port)
	}
	return nil, fmt.Errorf("nic: UD rdma_cm ids: %w", verbs.ErrNotSupported)
}

func resolveUD(ctx context.Context, c ibv.ConnManager, addr netip.Addr, port uint16, pd []byte) (ibv.UDPeer, error) {
	if u, ok := c.(ibv.UDConnManager); ok {
		return u.CMResolveUD(ctx, addr, port, pd)
	}
	return ibv.UDPeer{}, fmt.Errorf("nic: UD rdma_cm ids: %w", verbs.ErrNotSupported)
}

func (l *ibvCM) CMListenUD(port uint16) (ibv.CMUDListener, error) {
	return listenUD(l.ConnManager, port)
}

func (l *ibvCM) CMResolveUD(ctx context.Context, addr netip.Addr, port uint16, pd []byte) (ibv.UDPeer, error) {
	return resolveUD(ctx, l.ConnManager, addr, port, pd)
}

func (l *ibvNetCM) CMListenUD(port uint16) (ibv.CMUDListener, error) {
	return listenUD(l.ConnManager, port)
}

func (l *ibvNetCM) CMResolveUD(ctx context.Context, addr netip.Addr, port uint16, pd []byte) (ibv.UDPeer, error) {
	return resolveUD(ctx, l.ConnManager, addr, port, pd)
}
