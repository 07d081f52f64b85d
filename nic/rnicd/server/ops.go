// The op table: which Handler serves which op. Ops register from init
// functions of the files that implement them, so a new concern adds a file
// and touches nothing else.

package server

import (
	"fmt"
	"sync"

	"github.com/rnic/rnic/nic/rnicd/proto"
)

// Request is a decoded control request.
type Request struct {
	Op   proto.Op
	body []byte
	// FDs are the descriptors that came with the request. The server
	// closes them after the handler returns; a handler that keeps one
	// dups it.
	FDs []int
}

// Decode decodes the request body into m, which must consume it exactly.
func (r *Request) Decode(m proto.Message) error {
	rd := proto.NewReader(r.body)
	m.Decode(rd)
	if err := rd.Done(); err != nil {
		return fmt.Errorf("%v request: %w", r.Op, err)
	}
	return nil
}

// Reply is what a handler answers.
type Reply struct {
	msg   proto.Message
	fds   []int
	after []func()
}

// After makes f run once the reply is sent (an error reply too), on the
// session's goroutine: a handler closes descriptors it sent there, or
// starts work whose outcome must reach the client after the reply.
func (r *Reply) After(f func()) { r.after = append(r.after, f) }

// Set sets the reply body and the descriptors sent with it. The
// descriptors stay the server's: they are sent, not closed.
func (r *Reply) Set(m proto.Message, fds ...int) {
	r.msg, r.fds = m, fds
}

// Handler serves one op. An error becomes an error reply (its status from
// proto.StatusOf); a notice gets no reply either way.
type Handler func(s *Session, req *Request, rep *Reply) error

var handlers = struct {
	sync.RWMutex
	m map[proto.Op]Handler
}{m: map[proto.Op]Handler{}}

// Register makes h serve op. It panics if op is served already: two files
// claiming one op number is a programming error.
func Register(op proto.Op, h Handler) {
	handlers.Lock()
	defer handlers.Unlock()
	if _, ok := handlers.m[op]; ok {
		panic(fmt.Sprintf("rnicd server: op %v registered twice", op))
	}
	handlers.m[op] = h
}

func handlerOf(op proto.Op) Handler {
	handlers.RLock()
	defer handlers.RUnlock()
	return handlers.m[op]
}
