package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/nic/ibv"
)

// session is one tester connection and the objects it created.
type session struct {
	srv   *Server
	dev   ibv.Device
	conn  net.Conn
	hello bool
	next  uint32
	objs  map[uint32]any // handle → *pdObj, *mrObj, ibv.MW, ibv.CQ, *qpObj, ibv.CMListener, ibv.CMConn
	evAt  int            // events log index this session has read to
}

type pdObj struct{ pd ibv.PD }

type mrObj struct {
	mr  ibv.MR
	buf ibv.Buffer
}

type qpObj struct {
	qp     ibv.QP
	pd     ibv.PD
	ahs    []ibv.AH     // address handles of the QP's UD sends, destroyed with it
	groups []netip.Addr // multicast groups the QP is attached to
	// joins are the kernel IP memberships held for the groups it
	// attached to, kept until it is destroyed (ipjoin.go).
	joins map[netip.Addr]*net.UDPConn
}

// destroy detaches the QP from its groups (a kernel device refuses to
// destroy a QP with attachments), destroys it, then its address handles.
func (o *qpObj) destroy() error {
	if m, ok := o.qp.(ibv.McastQP); ok {
		for _, g := range o.groups {
			_ = m.DetachMcast(g, 0) // the QP goes anyway; its destroy says what failed
		}
	}
	o.leaveIP()
	o.groups = nil
	err := o.qp.Destroy()
	for _, ah := range o.ahs {
		ah.Destroy()
	}
	o.ahs = nil
	return err
}

func newSession(s *Server, c net.Conn) *session {
	_, at := s.events.since(1<<62, 0) // only events from now on
	return &session{srv: s, dev: s.cfg.Device, conn: c, objs: map[uint32]any{}, evAt: at}
}

// serve answers requests until the connection ends, then destroys the
// session's objects.
func (s *session) serve() {
	defer s.reset()
	sc := agentproto.NewScanner(bufio.NewReader(s.conn))
	w := bufio.NewWriter(s.conn)
	for sc.Scan() {
		resp, quit := s.handle(sc.Bytes())
		b, err := json.Marshal(resp)
		if err != nil {
			b, _ = json.Marshal(agentproto.Response{ID: resp.ID, Error: fail(agentproto.CodeBadRequest, err)})
		}
		w.Write(append(b, '\n'))
		if w.Flush() != nil || quit {
			return
		}
	}
	if err := sc.Err(); err != nil {
		s.srv.logf("connection from %v: %v", s.conn.RemoteAddr(), err)
	}
}

// handle answers one line; quit is set when the connection must close.
func (s *session) handle(line []byte) (resp agentproto.Response, quit bool) {
	req, err := agentproto.DecodeRequest(line)
	if err != nil {
		return agentproto.Response{Error: fail(agentproto.CodeBadRequest, err)}, false
	}
	resp.ID = req.ID
	if !s.hello && req.Op != agentproto.OpHello {
		resp.Error = fail(agentproto.CodeVersion, errors.New("the first request must be hello"))
		return resp, false
	}
	res, err := s.dispatch(req)
	if err != nil {
		var pe *agentproto.Error
		if !errors.As(err, &pe) {
			pe = fail(agentproto.CodeVerbs, err)
		}
		resp.Error = pe
		return resp, pe.Code == agentproto.CodeVersion
	}
	if res != nil {
		if resp.Result, err = json.Marshal(res); err != nil {
			resp.Error = fail(agentproto.CodeBadRequest, err)
		}
	}
	return resp, false
}

func fail(code string, err error) *agentproto.Error {
	return &agentproto.Error{Code: code, Message: err.Error()}
}

// args decodes a request's arguments, as a bad_request error.
func args(req agentproto.Request, v any) error {
	if err := agentproto.DecodeArgs(req, v); err != nil {
		return fail(agentproto.CodeBadRequest, err)
	}
	return nil
}

type handler func(s *session, req agentproto.Request) (any, error)

var handlers = map[string]handler{
	agentproto.OpHello:        (*session).opHello,
	agentproto.OpDeviceInfo:   func(s *session, _ agentproto.Request) (any, error) { return deviceInfo(s.dev, s.srv.cfg.Kind), nil },
	agentproto.OpCreatePD:     (*session).opCreatePD,
	agentproto.OpRegMR:        (*session).opRegMR,
	agentproto.OpDeregMR:      (*session).opDeregMR,
	agentproto.OpCreateCQ:     (*session).opCreateCQ,
	agentproto.OpCreateQP:     (*session).opCreateQP,
	agentproto.OpModifyQP:     (*session).opModifyQP,
	agentproto.OpQueryQP:      (*session).opQueryQP,
	agentproto.OpDestroyQP:    (*session).opDestroyQP,
	agentproto.OpPostSend:     (*session).opPostSend,
	agentproto.OpPostRecv:     (*session).opPostRecv,
	agentproto.OpPollCQ:       (*session).opPollCQ,
	agentproto.OpReadMR:       (*session).opReadMR,
	agentproto.OpWriteMR:      (*session).opWriteMR,
	agentproto.OpEvents:       (*session).opEvents,
	agentproto.OpCounters:     (*session).opCounters,
	agentproto.OpCMListen:     (*session).opCMListen,
	agentproto.OpCMAccept:     (*session).opCMAccept,
	agentproto.OpCMConnect:    (*session).opCMConnect,
	agentproto.OpCMDisconnect: (*session).opCMDisconnect,
	agentproto.OpReset:        func(s *session, _ agentproto.Request) (any, error) { s.reset(); return nil, nil },
	agentproto.OpAllocMW:      (*session).opAllocMW,
	agentproto.OpDeallocMW:    (*session).opDeallocMW,
	agentproto.OpAttachMcast:  (*session).opAttachMcast,
	agentproto.OpDetachMcast:  (*session).opDetachMcast,
}

func (s *session) dispatch(req agentproto.Request) (any, error) {
	h := handlers[req.Op]
	if h == nil {
		return nil, fail(agentproto.CodeUnknownOp, fmt.Errorf("unknown op %q", req.Op))
	}
	return h(s, req)
}

func (s *session) opHello(req agentproto.Request) (any, error) {
	var h agentproto.Hello
	if err := args(req, &h); err != nil {
		return nil, err
	}
	if h.Version != agentproto.Version {
		return nil, fail(agentproto.CodeVersion, fmt.Errorf("the tester speaks version %d, this agent %d", h.Version, agentproto.Version))
	}
	s.hello = true
	return agentproto.HelloResult{Version: agentproto.Version, Agent: "rnic conform agent", Device: s.dev.Name()}, nil
}

// add files an object under a new handle.
func (s *session) add(o any) uint32 {
	s.next++
	s.objs[s.next] = o
	return s.next
}

// get returns the object under h if it has type T.
func get[T any](s *session, h uint32, what string) (T, error) {
	o, ok := s.objs[h].(T)
	if !ok {
		var zero T
		return zero, fail(agentproto.CodeNoObject, fmt.Errorf("no %s with handle %d", what, h))
	}
	return o, nil
}

// reset destroys every object: connections and listeners, windows, QPs,
// CQs, MRs, then PDs, each kind newest first.
func (s *session) reset() {
	hs := make([]uint32, 0, len(s.objs))
	for h := range s.objs {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i] > hs[j] })
	for pass := 0; pass < 6; pass++ {
		for _, h := range hs {
			if o, ok := s.objs[h]; ok && rank(o) == pass {
				destroy(o)
				delete(s.objs, h)
			}
		}
	}
	s.objs = map[uint32]any{}
}

func rank(o any) int {
	switch o.(type) {
	case ibv.CMConn, ibv.CMListener:
		return 0
	case ibv.MW:
		// Before the QP a Type 2B window is bound through and the MR it
		// is bound to: rxe destroys a QP a bound window still holds only
		// after a kernel warning (rxe_pool.c __rxe_cleanup, Linux 6.1).
		return 1
	case *qpObj:
		return 2
	case ibv.CQ:
		return 3
	case *mrObj:
		return 4
	}
	return 5
}

func destroy(o any) {
	switch o := o.(type) {
	case ibv.CMConn:
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		o.Disconnect(ctx)
		cancel()
	case ibv.CMListener:
		o.Close()
	case *qpObj:
		o.destroy()
	case ibv.CQ:
		o.Destroy()
	case ibv.MW:
		o.Dealloc()
	case *mrObj:
		o.mr.Dereg()
		o.buf.Close()
	case *pdObj:
		o.pd.Dealloc()
	}
}
