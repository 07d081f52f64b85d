// A served device: its sessions, and the routing of its asynchronous
// events to the client that owns the object each one concerns.

package server

import (
	"sync"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

type device struct {
	srv *Server
	dev ibv.Device

	mu       sync.Mutex
	owners   map[any]eventTarget // ibv.QP, ibv.CQ, ibv.SRQ → who gets its events
	sessions map[*Session]struct{}
}

// eventTarget is an object events can concern.
type eventTarget interface {
	object
	// event is called on the router goroutine, with the device's lock
	// held, before the event is forwarded to the client; it must not
	// block.
	event(e verbs.AsyncEvent)
	session() *Session
}

func newDevice(srv *Server, d ibv.Device) *device {
	return &device{srv: srv, dev: d, owners: make(map[any]eventTarget), sessions: make(map[*Session]struct{})}
}

func (d *device) attach(s *Session) {
	d.mu.Lock()
	d.sessions[s] = struct{}{}
	d.mu.Unlock()
}

func (d *device) detach(s *Session) {
	d.mu.Lock()
	delete(d.sessions, s)
	d.mu.Unlock()
}

// own routes the events of obj (an ibv.QP, ibv.CQ or ibv.SRQ) to t.
func (d *device) own(obj any, t eventTarget) {
	d.mu.Lock()
	d.owners[obj] = t
	d.mu.Unlock()
}

func (d *device) disown(obj any) {
	d.mu.Lock()
	delete(d.owners, obj)
	d.mu.Unlock()
}

// routeEvents forwards the device's events until its channel closes.
func (d *device) routeEvents() {
	for e := range d.dev.Events() {
		var key any
		var kind proto.ObjectKind
		switch {
		case e.QP != nil:
			key, kind = e.QP, proto.ObjectQP
		case e.CQ != nil:
			key, kind = e.CQ, proto.ObjectCQ
		case e.SRQ != nil:
			key, kind = e.SRQ, proto.ObjectSRQ
		}
		if key == nil && e.Type.Affiliated() {
			// An object's event without its object (destroyed
			// meanwhile): no client may get it as a port event.
			continue
		}
		if key == nil {
			// A port event: every client of the device hears it.
			d.mu.Lock()
			for s := range d.sessions {
				s.SendEvent(proto.OpEvent, &proto.Event{Type: e.Type, Port: e.Port})
			}
			d.mu.Unlock()
			continue
		}
		// event runs under the lock: an object's destroy disowns it
		// (taking the lock) before it unmaps the ring event may touch.
		d.mu.Lock()
		t, ok := d.owners[key]
		if ok {
			t.event(e.Type)
		}
		d.mu.Unlock()
		if !ok {
			continue // an object destroyed meanwhile
		}
		t.session().SendEvent(proto.OpEvent, &proto.Event{Type: e.Type, Object: kind, Handle: t.handle(), Port: e.Port})
	}
}
