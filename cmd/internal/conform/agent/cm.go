package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
)

func (s *session) cm() (ibv.ConnManager, error) {
	cm, ok := s.dev.(ibv.ConnManager)
	if !ok {
		return nil, fail(agentproto.CodeUnsupported, fmt.Errorf("device %s offers no rdma_cm", s.dev.Name()))
	}
	return cm, nil
}

func param(p agentproto.ConnParam) *ibv.ConnParam {
	return &ibv.ConnParam{ResponderResources: p.ResponderResources, InitiatorDepth: p.InitiatorDepth,
		RetryCount: p.RetryCount, RNRRetryCount: p.RNRRetryCount, Access: memory.Access(p.Access)}
}

func waitCtx(ms int) (context.Context, context.CancelFunc) {
	d := time.Duration(ms) * time.Millisecond
	if d <= 0 || d > maxPollWait {
		d = maxPollWait
	}
	return context.WithTimeout(context.Background(), d)
}

// cmErr marks a wait that ran out, and a rejection with what it said.
func cmErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fail(agentproto.CodeTimeout, err)
	}
	if errors.Is(err, ibv.ErrRejected) {
		e := fail(agentproto.CodeRejected, err)
		var d ibv.RejectDetail
		if errors.As(err, &d) {
			e.Reject = &agentproto.Reject{Reason: d.RejectReason(), PrivateData: d.RejectPrivateData()}
		}
		return e
	}
	return err
}

func connInfo(h uint32, c ibv.CMConn) agentproto.CMConnInfo {
	return agentproto.CMConnInfo{H: h, RemoteQPN: c.RemoteQPN(), PrivateData: c.PrivateData(),
		LocalAddr: c.LocalAddr().String(), RemoteAddr: c.RemoteAddr().String()}
}

func (s *session) opCMListen(req agentproto.Request) (any, error) {
	var a agentproto.CMListen
	if err := args(req, &a); err != nil {
		return nil, err
	}
	cm, err := s.cm()
	if err != nil {
		return nil, err
	}
	l, err := cm.CMListen(a.Port)
	if err != nil {
		return nil, err
	}
	return agentproto.CMListenResult{H: s.add(l), Port: l.Port()}, nil
}

func (s *session) opCMAccept(req agentproto.Request) (any, error) {
	var a agentproto.CMAccept
	if err := args(req, &a); err != nil {
		return nil, err
	}
	l, err := get[ibv.CMListener](s, a.Listener, "listener")
	if err != nil {
		return nil, err
	}
	ctx, cancel := waitCtx(a.WaitMS)
	defer cancel()
	r, err := l.Accept(ctx)
	if err != nil {
		return nil, cmErr(err)
	}
	if a.Reject {
		return agentproto.CMConnInfo{PrivateData: r.PrivateData(), RemoteAddr: r.RemoteAddr().String()}, r.Reject(a.PrivateData)
	}
	qp, err := s.qp(a.QP)
	if err != nil {
		r.Reject(nil)
		return nil, err
	}
	c, err := r.Accept(ctx, qp, a.PrivateData, param(a.Param))
	if err != nil {
		return nil, cmErr(err)
	}
	return connInfo(s.add(c), c), nil
}

func (s *session) opCMConnect(req agentproto.Request) (any, error) {
	var a agentproto.CMConnect
	if err := args(req, &a); err != nil {
		return nil, err
	}
	cm, err := s.cm()
	if err != nil {
		return nil, err
	}
	qp, err := s.qp(a.QP)
	if err != nil {
		return nil, err
	}
	addr, err := netip.ParseAddr(a.Addr)
	if err != nil {
		return nil, fail(agentproto.CodeBadRequest, err)
	}
	ctx, cancel := waitCtx(a.WaitMS)
	defer cancel()
	c, err := cm.CMConnect(ctx, qp, addr, a.Port, a.PrivateData, param(a.Param))
	if err != nil {
		return nil, cmErr(err)
	}
	return connInfo(s.add(c), c), nil
}

func (s *session) opCMDisconnect(req agentproto.Request) (any, error) {
	var a agentproto.Handle
	if err := args(req, &a); err != nil {
		return nil, err
	}
	c, err := get[ibv.CMConn](s, a.H, "connection")
	if err != nil {
		return nil, err
	}
	ctx, cancel := waitCtx(2000)
	defer cancel()
	delete(s.objs, a.H)
	return nil, cmErr(c.Disconnect(ctx))
}
