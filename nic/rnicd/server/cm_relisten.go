// Ports whose listener a live client closed a moment ago: a connect to one
// waits (listenGrace at most) for the port to be listened on again before
// it is refused. perftest -R listens twice on its port, for its exchange and
// then for its data connection, and tells its client to connect in
// between; the kernel's CM binds and listens in microseconds and wins that
// race in practice, the daemon's round trips do not always, and perftest
// 4.5's client crashes in its retry after a REJECTED (it destroys its ids,
// then connects them again). A port nobody listened on, or whose client is
// gone, is refused at once as before.

package server

import (
	"net/netip"
	"time"
)

// relistenWindow is how long after its listener closed a port still
// counts as about to be listened on again by the same client.
const relistenWindow = 10 * time.Second

// closedListen is the last listening binding given back on a port.
type closedListen struct {
	addr  netip.Addr
	owner *Session
	until time.Time
}

// noteClosed remembers that b, listened on, was given back. Caller holds
// t.mu.
func (t *portTable) noteClosed(b *portBinding) {
	if !b.listening {
		return
	}
	if t.closed == nil {
		t.closed = map[portKey]closedListen{}
	}
	t.closed[b.key] = closedListen{addr: b.addr, owner: b.owner, until: time.Now().Add(relistenWindow)}
}

// forgetClosed drops what noteClosed remembered of owner's ports (its
// session ended: it listens on nothing again). Caller holds t.mu.
func (t *portTable) forgetClosed(owner *Session) {
	for k, c := range t.closed {
		if c.owner == owner {
			delete(t.closed, k)
		}
	}
}

// relistenDue says whether port k on addr had a listener closed within
// relistenWindow by a client still connected. Caller holds t.mu.
func (t *portTable) relistenDue(k portKey, addr netip.Addr) bool {
	c, ok := t.closed[k]
	if !ok {
		return false
	}
	if time.Now().After(c.until) {
		delete(t.closed, k)
		return false
	}
	return !addr.IsValid() || !c.addr.IsValid() || addr == c.addr
}
