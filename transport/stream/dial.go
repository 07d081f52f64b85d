package stream

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
)

// dialAsync implements Dialer.Dial for kernel TCP and netstack: dial runs
// on a goroutine, which then calls done; a connection made after cancel is
// aborted and done gets ErrCanceled.
func dialAsync(dial func(ctx context.Context) (Conn, error), done func(Conn, error)) (cancel func()) {
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
			c, err = nil, ErrCanceled
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

// listenerBase is the part of a Listener kernel TCP and netstack share: the
// bound address, the acceptor, and the accept goroutine's start and end.
type listenerBase struct {
	addr     netip.AddrPort
	acceptor atomic.Pointer[func(Conn)]
	mu       sync.Mutex
	started  bool
	closed   bool
}

// Addr implements Listener.
func (l *listenerBase) Addr() netip.AddrPort { return l.addr }

// setAcceptor stores the acceptor; the first call starts acceptLoop.
func (l *listenerBase) setAcceptor(onConn func(Conn), acceptLoop func()) {
	l.acceptor.Store(&onConn)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started && !l.closed {
		l.started = true
		go acceptLoop()
	}
}

// closeOnce runs release on the first call, under the lock.
func (l *listenerBase) closeOnce(release func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return release()
}

// hand gives an accepted connection to the acceptor, or resets it when
// there is none.
func (l *listenerBase) hand(c Conn) {
	if f := l.acceptor.Load(); f != nil && *f != nil {
		(*f)(c)
	} else {
		c.Abort()
	}
}
