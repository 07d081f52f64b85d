package rdmacm

import "context"

// rejecter is a request a listener queues: a REQ or a SIDR_REQ.
type rejecter interface {
	Reject(privateData []byte) error
}

// requestQueue is a listener's backlog: requests wait in it for Accept,
// and closing it rejects those left.
type requestQueue[R rejecter] struct {
	reqs chan R
	done chan struct{}
}

func newRequestQueue[R rejecter](backlog int) requestQueue[R] {
	return requestQueue[R]{reqs: make(chan R, backlog), done: make(chan struct{})}
}

// Accept waits for the next request.
func (q *requestQueue[R]) Accept(ctx context.Context) (R, error) {
	var none R
	select {
	case r := <-q.reqs:
		return r, nil
	case <-q.done:
		return none, ErrClosed
	case <-ctx.Done():
		return none, ctx.Err()
	}
}

// close ends the queue (once) and rejects the requests still in it.
func (q *requestQueue[R]) close() {
	select {
	case <-q.done:
		return
	default:
	}
	close(q.done)
	for {
		select {
		case r := <-q.reqs:
			r.Reject(nil)
		default:
			return
		}
	}
}
