// rdma_cm with external QPs (ibv.ExternalConnManager) on an AsIBV device:
// the wrappers with a ConnManager forward it; one without refuses it with
// verbs.ErrNotSupported.

package nic

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

var (
	_ ibv.ExternalConnManager = (*ibvCM)(nil)
	_ ibv.ExternalConnManager = (*ibvNetCM)(nil)
)

func connectExternal(ctx context.Context, c ibv.ConnManager, qpn uint32, addr netip.Addr, port uint16, pd []byte, p *ibv.ConnParam) (ibv.CMResponse, error) {
	if x, ok := c.(ibv.ExternalConnManager); ok {
		return x.CMConnectExternal(ctx, qpn, addr, port, pd, p)
	}
	return nil, fmt.Errorf("nic: rdma_cm with an external QP: %w", verbs.ErrNotSupported)
}

func (l *ibvCM) CMConnectExternal(ctx context.Context, qpn uint32, addr netip.Addr, port uint16, pd []byte, p *ibv.ConnParam) (ibv.CMResponse, error) {
	return connectExternal(ctx, l.ConnManager, qpn, addr, port, pd, p)
}

func (l *ibvNetCM) CMConnectExternal(ctx context.Context, qpn uint32, addr netip.Addr, port uint16, pd []byte, p *ibv.ConnParam) (ibv.CMResponse, error) {
	return connectExternal(ctx, l.ConnManager, qpn, addr, port, pd, p)
}
