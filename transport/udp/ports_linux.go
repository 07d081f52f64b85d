// The per-source-port send sockets: opened on first use, kept while an
// engine holds the port (transport.SourcePorts), closed when the last
// holder releases it. Ports used without a holder (a frame sent after its
// QP was destroyed, a link user that never holds) keep their sockets on a
// short idle list, oldest closed first, so nothing grows without bound.
//
// A socket may be in use by a send while its port is released: each
// socket counts its users (the map is one, every send in flight another)
// and the last one closes it, so a send never writes to a closed or reused
// descriptor.

package udp

import (
	"slices"

	"github.com/rnic/rnic/transport"
)

// maxIdlePorts bounds the sockets kept for ports nobody holds.
const maxIdlePorts = 8

var _ transport.SourcePorts = (*Endpoint)(nil)

// HoldSourcePort implements transport.SourcePorts.
func (e *Endpoint) HoldSourcePort(port uint16) {
	if port == e.cfg.Port {
		return
	}
	e.sys.mu.Lock()
	defer e.sys.mu.Unlock()
	if e.closed.Load() {
		return
	}
	e.sys.holds[port]++
	if i := slices.Index(e.sys.idle, port); i >= 0 {
		e.sys.idle = slices.Delete(e.sys.idle, i, i+1)
	}
}

// ReleaseSourcePort implements transport.SourcePorts: the last release of
// a port closes its socket (once no send uses it).
func (e *Endpoint) ReleaseSourcePort(port uint16) {
	if port == e.cfg.Port {
		return
	}
	e.sys.mu.Lock()
	defer e.sys.mu.Unlock()
	switch n := e.sys.holds[port]; n {
	case 0: // not held: nothing to release
	case 1:
		delete(e.sys.holds, port)
		e.dropPort(port)
	default:
		e.sys.holds[port] = n - 1
	}
}

// sockFor returns the socket frames from UDP source port port leave from,
// opening it on first use, with one use counted: the caller gives it back
// with done. A port that cannot be bound is served by the main socket
// (portSock.fallback) until its holders release it.
func (e *Endpoint) sockFor(port uint16) (portSock, error) {
	if port == e.cfg.Port {
		return portSock{s: e.sys.main}, nil
	}
	e.sys.mu.RLock()
	ps, ok := e.sys.ports[port]
	if ok && !ps.fallback {
		ps.s.refs.Add(1)
	}
	e.sys.mu.RUnlock()
	if ok {
		return ps, nil
	}
	e.sys.mu.Lock()
	defer e.sys.mu.Unlock()
	if e.closed.Load() {
		return portSock{}, transport.ErrClosed
	}
	if ps, ok := e.sys.ports[port]; ok {
		if !ps.fallback {
			ps.s.refs.Add(1)
		}
		return ps, nil
	}
	s, err := e.openSock(port, false)
	if err != nil {
		ps = portSock{s: e.sys.main, fallback: true}
	} else {
		s.refs.Store(2) // the map's and the caller's
		ps = portSock{s: s}
	}
	e.sys.ports[port] = ps
	if e.sys.holds[port] == 0 {
		e.sys.idle = append(e.sys.idle, port)
		if len(e.sys.idle) > maxIdlePorts {
			old := e.sys.idle[0]
			e.sys.idle = slices.Delete(e.sys.idle, 0, 1)
			e.dropPort(old)
		}
	}
	return ps, nil
}

// done gives back a use of ps taken by sockFor (none for the zero
// portSock).
func (ps portSock) done() {
	if ps.s != nil && !ps.fallback {
		ps.s.unref()
	}
}

// unref drops one use of a per-port socket; the last closes it. The main
// socket (refs never counted up) is closed only by Endpoint.Close.
func (s *sock) unref() {
	if s.perPort && s.refs.Add(-1) == 0 {
		s.f.Close()
	}
}

// dropPort forgets port's socket and drops the map's use of it. e.sys.mu
// is held.
func (e *Endpoint) dropPort(port uint16) {
	ps, ok := e.sys.ports[port]
	if !ok {
		return
	}
	delete(e.sys.ports, port)
	ps.done()
}

// OpenPorts returns how many per-source-port sockets are open and how many
// ports are held, for tests and diagnostics.
func (e *Endpoint) OpenPorts() (sockets, held int) {
	e.sys.mu.RLock()
	defer e.sys.mu.RUnlock()
	for _, ps := range e.sys.ports {
		if !ps.fallback {
			sockets++
		}
	}
	return sockets, len(e.sys.holds)
}
