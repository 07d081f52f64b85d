// Asynchronous requests (proto/async.go): the request names a token, its
// reply says the work started, and a result event ends it. A caller whose
// context ends cancels the work and still waits for the result (it always
// comes, once), so that nothing the daemon made for it is left behind.

package client

import (
	"context"
	"fmt"
	"sync"

	"github.com/rnic/rnic/nic/rnicd/proto"
)

func init() {
	registerEvent(proto.OpNetResult, deliverResult)
	registerEvent(proto.OpCMResult, deliverResult)
}

// pending is an asynchronous request waiting for its result.
type pending struct {
	d      *Device
	op     proto.Op
	token  uint32
	result chan proto.AsyncResult // buffered: the reader never blocks
}

var inFlight = struct {
	sync.Mutex
	next uint32
	m    map[uint32]*pending
}{m: map[uint32]*pending{}}

// startAsync sends the request req builds for a fresh token and returns
// the request in flight and the descriptors of its reply (the caller's).
func (d *Device) startAsync(op proto.Op, req func(token uint32) proto.Message) (*pending, []int, error) {
	p := &pending{d: d, op: op, result: make(chan proto.AsyncResult, 1)}
	inFlight.Lock()
	for {
		inFlight.next++
		if _, used := inFlight.m[inFlight.next]; inFlight.next != 0 && !used {
			break
		}
	}
	p.token = inFlight.next
	inFlight.m[p.token] = p
	inFlight.Unlock()
	fds, err := d.call(op, req(p.token), nil, &proto.Empty{})
	if err != nil {
		p.forget()
		return nil, nil, err
	}
	return p, fds, nil
}

func (p *pending) forget() {
	inFlight.Lock()
	if inFlight.m[p.token] == p {
		delete(inFlight.m, p.token)
	}
	inFlight.Unlock()
}

// deliverResult hands a result event to its request. It runs on the
// goroutine that read the event (leader.go).
func deliverResult(d *Device, body []byte) {
	var m proto.AsyncResult
	r := proto.NewReader(body)
	m.Decode(r)
	if r.Done() != nil {
		return
	}
	inFlight.Lock()
	p, ok := inFlight.m[m.Token]
	if ok && p.d == d {
		delete(inFlight.m, m.Token)
	}
	inFlight.Unlock()
	if !ok || p.d != d {
		return
	}
	m.Body = append([]byte(nil), m.Body...) // body is the reader's buffer
	p.result <- m
}

// wait waits for the result, decoding a success into body. If ctx ends
// first it asks the daemon to cancel (cancelOp) and waits for the result
// still: ctxErr is then ctx's error, and a successful result (the work
// won the race) is the caller's to undo.
func (p *pending) wait(ctx context.Context, cancelOp proto.Op, body proto.Message) (err, ctxErr error) {
	var m proto.AsyncResult
	select {
	case m = <-p.result:
	case <-p.d.gone:
		p.forget()
		return p.d.goneErr, nil
	case <-ctx.Done():
		ctxErr = ctx.Err()
		p.d.call(cancelOp, &proto.Token{Token: p.token}, nil, &proto.Empty{})
		select {
		case m = <-p.result:
		case <-p.d.gone:
			p.forget()
			return p.d.goneErr, ctxErr
		}
	}
	if err := m.Err(p.op); err != nil {
		if ctxErr != nil {
			return ctxErr, ctxErr // the work failed because it was cancelled
		}
		return withRejectDetail(err, &m), nil
	}
	if err := m.DecodeResult(body); err != nil {
		return fmt.Errorf("rnicd: %v result: %w", p.op, err), ctxErr
	}
	return nil, ctxErr
}
