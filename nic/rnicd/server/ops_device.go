// Device ops: OPEN (the first request of a connection), port and GID
// queries, counters.

package server

import (
	"fmt"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpOpen, handleOpen)
	Register(proto.OpQueryPort, handleQueryPort)
	Register(proto.OpQueryGID, handleQueryGID)
	Register(proto.OpGIDIndex, handleGIDIndex)
	Register(proto.OpCounters, handleCounters)
}

func handleOpen(s *Session, req *Request, rep *Reply) error {
	var m proto.OpenReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	if m.Version != proto.Version {
		return fmt.Errorf("%w: client speaks version %d, this rnicd only %d: use the drop-in libraries and rnic of this rnicd's build",
			proto.ErrVersion, m.Version, proto.Version)
	}
	if s.dev != nil {
		return fmt.Errorf("rnicd: open %s: this connection has %s open: %w", m.Name, s.dev.dev.Name(), verbs.ErrInvalid)
	}
	d, ok := s.tenant.devs[m.Name]
	if !ok {
		return fmt.Errorf("%w: %q", proto.ErrNoDevice, m.Name)
	}
	port, err := d.dev.QueryPort(1)
	if err != nil {
		return err
	}
	if s.bell, err = newSessionBell(&s.counts.doorbells); err != nil {
		return err
	}
	fds := []int{s.bell.mem.Fd(), s.bell.pair.sendPeer(rep)}
	// The client maps its own copy; the daemon keeps the mapping.
	rep.After(func() { s.bell.mem.CloseFd() })
	s.arena = newArena(s)
	gids := d.dev.GIDs()
	if len(gids) > proto.MaxGIDs {
		gids = gids[:proto.MaxGIDs]
	}
	s.mu.Lock() // Clients reads it from elsewhere
	s.dev = d
	s.mu.Unlock()
	d.attach(s)
	s.logf("opened %s", m.Name)
	rep.Set(&proto.OpenReply{Version: proto.Version, Name: d.dev.Name(), Attr: d.dev.Query(), Port: port, GIDs: gids}, fds...)
	return nil
}

func handleQueryPort(s *Session, req *Request, rep *Reply) error {
	var m proto.QueryPortReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	a, err := s.dev.dev.QueryPort(m.Port)
	if err != nil {
		return err
	}
	rep.Set(&proto.PortReply{Attr: a})
	return nil
}

func handleQueryGID(s *Session, req *Request, rep *Reply) error {
	var m proto.QueryGIDReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	if m.Index > 1<<20 {
		return fmt.Errorf("rnicd: GID index %d: %w", m.Index, verbs.ErrInvalid)
	}
	g, err := s.dev.dev.QueryGID(m.Port, int(m.Index))
	if err != nil {
		return err
	}
	rep.Set(&proto.GID{Addr: g})
	return nil
}

func handleGIDIndex(s *Session, req *Request, rep *Reply) error {
	var m proto.GID
	if err := req.Decode(&m); err != nil {
		return err
	}
	i, err := s.dev.dev.GIDIndex(m.Addr)
	if err != nil {
		return err
	}
	rep.Set(&proto.Index{Index: uint32(i)})
	return nil
}

func handleCounters(s *Session, req *Request, rep *Reply) error {
	if err := req.Decode(&proto.Empty{}); err != nil {
		return err
	}
	var out proto.CountersReply
	if c, ok := s.dev.dev.(ibv.Counters); ok {
		for _, v := range c.Counters() {
			if len(out.Counters) == proto.MaxCounters {
				break
			}
			name := v.Name
			if len(name) > proto.MaxName {
				name = name[:proto.MaxName]
			}
			out.Counters = append(out.Counters, proto.Counter{Name: name, Value: v.Value})
		}
	}
	rep.Set(&out)
	return nil
}
