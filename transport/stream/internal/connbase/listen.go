package connbase

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/transport/stream"
)

// DialAsync implements stream.Dialer's Dial for kernel TCP and netstack:
// dial runs on a goroutine, which then calls done; a connection made after
// cancel is aborted and done gets stream.ErrCanceled.
func DialAsync(dial func(ctx context.Context) (stream.Conn, error), done func(stream.Conn, error)) (cancel func()) {
	ctx, stop := context.WithCancel(context.Background())
	var (
		mu                 sync.Mutex
		canceled, finished bool
	)
	go func() {
		c, err := dial(ctx)
		mu.Lock()
		if canceled {
			if c != nil {
				c.Abort()
			}
			c, err = nil, stream.ErrCanceled
		}
		finished = true
		mu.Unlock()
		stop()
		if err != nil {
			done(nil, err)
			return
		}
		done(c, nil)
	}()
	return func() {
		mu.Lock()
		if !finished {
			canceled = true
		}
		mu.Unlock()
		stop()
	}
}

// Listener is the part of a stream.Listener kernel TCP and netstack share
// (embedded in kerneltcp.Listener and netstack.Listener): the
// bound address, the acceptor, and the accept goroutine's start and end.
type Listener struct {
	Bound    netip.AddrPort // the address listened on (Addr)
	acceptor atomic.Pointer[func(stream.Conn)]
	mu       sync.Mutex
	started  bool
	closed   bool
}

// Addr implements stream.Listener.
func (l *Listener) Addr() netip.AddrPort { return l.Bound }

// InstallAcceptor stores the acceptor; the first call starts acceptLoop.
func (l *Listener) InstallAcceptor(onConn func(stream.Conn), acceptLoop func()) {
	l.acceptor.Store(&onConn)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started && !l.closed {
		l.started = true
		go acceptLoop()
	}
}

// CloseOnce runs release on the first call, under the lock.
func (l *Listener) CloseOnce(release func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return release()
}

// Hand gives an accepted connection to the acceptor, or resets it when
// there is none.
func (l *Listener) Hand(c stream.Conn) {
	if f := l.acceptor.Load(); f != nil && *f != nil {
		(*f)(c)
	} else {
		c.Abort()
	}
}
