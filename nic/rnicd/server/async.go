// A session's extension state, for the concerns beyond the core verbs (the
// side channel, rdma_cm): their handles, the asynchronous requests in
// flight, and the teardown when the client goes. Asynchronous requests
// (proto/async.go) start once their reply is sent and end with a result
// event written straight to the client: never dropped, always after the
// reply.

package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// maxAsync bounds a client's asynchronous requests in flight.
const maxAsync = 4096

// sessionExt is a session's state of the concerns in this file's siblings.
type sessionExt struct {
	s      *Session
	ctx    context.Context // ends with the session
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	next   uint32
	async  map[uint32]context.CancelFunc // tokens in flight
	wg     sync.WaitGroup                // async work and watchers

	sockets      int // side-channel listeners, proxies, accepts and dials
	netListeners map[uint32]*netListener
	proxies      map[*proxy]struct{}

	cmIDs       int // rdma_cm listeners, requests, connections
	cmListeners map[uint32]*cmListener
	cmRequests  map[uint32]*cmRequest
	cmConns     map[uint32]*cmConn
}

var exts = struct {
	sync.Mutex
	m map[*Session]*sessionExt
}{m: map[*Session]*sessionExt{}}

// extOf returns s's extension state, creating it (and its teardown) on
// first use. Handlers call it on the session's goroutine.
func extOf(s *Session) *sessionExt {
	exts.Lock()
	defer exts.Unlock()
	if x := exts.m[s]; x != nil {
		return x
	}
	x := &sessionExt{s: s, async: map[uint32]context.CancelFunc{}, netListeners: map[uint32]*netListener{},
		proxies: map[*proxy]struct{}{}, cmListeners: map[uint32]*cmListener{}, cmRequests: map[uint32]*cmRequest{},
		cmConns: map[uint32]*cmConn{}}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	exts.m[s] = x
	s.OnClose(x.close)
	return x
}

// newHandle returns a handle no live object of x has (0 is never one).
// Caller holds x.mu.
func (x *sessionExt) newHandle() uint32 {
	for {
		x.next++
		h := x.next
		_, l := x.netListeners[h]
		_, cl := x.cmListeners[h]
		_, r := x.cmRequests[h]
		_, c := x.cmConns[h]
		if h != 0 && !l && !cl && !r && !c {
			return h
		}
	}
}

// errSessionGone fails work that ends after its client.
var errSessionGone = fmt.Errorf("rnicd: client gone: %w", verbs.ErrClosed)

// work is an asynchronous request's work: it returns the result body
// (nil for none) and, optionally, what to do once the result is sent.
type work func(ctx context.Context) (proto.Message, func(), error)

// startAsync registers token and, once the reply is sent, runs w off the
// session's goroutine and sends its outcome as a resultOp event. A handler
// calls it last: once it succeeds, the work runs.
func (x *sessionExt) startAsync(rep *Reply, token uint32, resultOp proto.Op, w work) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.closed:
		return errSessionGone
	case x.async[token] != nil:
		return fmt.Errorf("rnicd: token %d already in flight: %w", token, verbs.ErrInvalid)
	case len(x.async) >= maxAsync:
		return limitError(maxAsync, "requests in flight", "(fixed)")
	}
	ctx, cancel := context.WithCancel(x.ctx)
	x.async[token] = cancel
	x.wg.Add(1)
	rep.After(func() {
		go func() {
			defer x.wg.Done()
			body, after, err := w(ctx)
			x.mu.Lock()
			delete(x.async, token)
			x.mu.Unlock()
			cancel()
			x.result(resultOp, token, body, err)
			if after != nil {
				after()
			}
		}()
	})
	return nil
}

// cancelAsync cancels the work of token, if it is still in flight.
func (x *sessionExt) cancelAsync(token uint32) {
	x.mu.Lock()
	cancel := x.async[token]
	x.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// result sends the outcome of an asynchronous request.
func (x *sessionExt) result(op proto.Op, token uint32, body proto.Message, err error) {
	m := proto.AsyncResult{Token: token}
	if err != nil {
		m.Status, m.Msg = proto.StatusOf(err), err.Error()
		if len(m.Msg) > proto.MaxErrorLen {
			m.Msg = m.Msg[:proto.MaxErrorLen]
		}
	}
	if body != nil { // a failure's details (CMRejectInfo), or the result
		w := proto.NewWriter(nil)
		body.Encode(w)
		m.Body = w.Bytes()
	}
	x.s.sendNow(op, &m)
}

// sendNow writes an event at once, in order with replies: for events a
// client must not miss (the event queue drops when full).
func (s *Session) sendNow(op proto.Op, body proto.Message) bool {
	if s.dead.Load() {
		return false
	}
	msg := proto.AppendMessage(nil, proto.Header{Op: op, Kind: proto.KindEvent}, body)
	s.wmu.Lock()
	_, err := s.conn.Write(msg)
	s.wmu.Unlock()
	return err == nil
}

// close tears everything down when the session ends (before its QPs are
// destroyed): async work is cancelled, listeners close, connections
// disconnect and proxies close; it returns once no work of the session
// runs.
func (x *sessionExt) close() {
	x.mu.Lock()
	x.closed = true
	nls, pxs, cls, reqs, conns := x.netListeners, x.proxies, x.cmListeners, x.cmRequests, x.cmConns
	x.netListeners, x.proxies, x.cmListeners, x.cmRequests, x.cmConns = nil, nil, nil, nil, nil
	x.mu.Unlock()
	x.cancel()
	for _, l := range nls {
		l.close()
	}
	for p := range pxs {
		p.close()
	}
	for _, l := range cls {
		l.close()
	}
	for _, r := range reqs {
		r.reject(nil)
	}
	for _, c := range conns {
		c.abort()
	}
	x.wg.Wait()
	exts.Lock()
	delete(exts.m, x.s)
	exts.Unlock()
}
