// rnic stat's per-client counters and tenants (proto/stat_tenants.go): a
// client sees the counters of the clients it may see (stat.go) and the
// tenants it may see (its own; all from the host's socket with uid 0 or
// the daemon's).

package server

import (
	"cmp"
	"maps"
	"slices"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

func init() {
	Register(proto.OpStatClientCounters, handleStatClientCounters)
	Register(proto.OpStatTenants, handleStatTenants)
	Register(proto.OpStatAllDevices, handleStatAllDevices)
}

func handleStatAllDevices(s *Session, req *Request, rep *Reply) error {
	var m proto.StatPage
	if err := req.Decode(&m); err != nil {
		return err
	}
	devs := map[string]*device{}
	for _, t := range s.srv.allTenants() {
		if s.seesTenant(t) {
			maps.Copy(devs, t.devs)
		}
	}
	return statDevicesPage(devs, m.After, rep)
}

func handleStatClientCounters(s *Session, req *Request, rep *Reply) error {
	var m proto.StatPage
	if err := req.Decode(&m); err != nil {
		return err
	}
	out := &proto.StatClientCountersReply{}
	size := proto.NewWriter(nil)
	for _, o := range s.visibleSessions() {
		if o.id <= m.After {
			continue
		}
		if int64(size.Len()) > statBudget.Load() {
			out.More = true
			break
		}
		c := proto.StatClientCounters{ID: o.id, Tenant: o.tenant.name, Counters: protoCounters(o.counts.load().Counters())}
		c.Encode(size)
		out.Clients = append(out.Clients, c)
	}
	rep.Set(out)
	return nil
}

func handleStatTenants(s *Session, req *Request, rep *Reply) error {
	var m proto.StatPage
	if err := req.Decode(&m); err != nil {
		return err
	}
	var ts []*tenant
	for _, t := range s.srv.allTenants() {
		if s.seesTenant(t) {
			ts = append(ts, t)
		}
	}
	out := &proto.StatTenantsReply{}
	size := proto.NewWriter(nil)
	for i := m.After; i < uint64(len(ts)); i++ {
		if int64(size.Len()) > statBudget.Load() {
			out.More = true
			break
		}
		st := s.srv.statTenant(ts[i])
		st.Encode(size)
		out.Tenants = append(out.Tenants, st)
	}
	rep.Set(out)
	return nil
}

// allTenants returns the host's tenant, then the others by name.
func (s *Server) allTenants() []*tenant {
	out := make([]*tenant, 0, len(s.tenants)+1)
	for _, t := range s.tenants {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *tenant) int { return cmp.Compare(a.name, b.name) })
	return append([]*tenant{s.host}, out...)
}

// statTenant describes t: its devices, clients, holdings, limits and the
// counters of its clients, live and gone.
func (s *Server) statTenant(t *tenant) proto.StatTenant {
	st := proto.StatTenant{Name: t.name}
	for n := range t.devs {
		st.Devices = append(st.Devices, n)
	}
	slices.Sort(st.Devices)
	st.Devices = st.Devices[:min(len(st.Devices), proto.MaxTenantDevices)]
	s.mu.Lock()
	counts := t.gone.load()
	st.Clients = uint32(t.clients)
	for sess := range s.sessions {
		if sess.tenant == t {
			counts.add(sess.counts.load())
		}
	}
	s.mu.Unlock()
	s.budget.mu.Lock()
	held := t.use
	s.budget.mu.Unlock()
	st.Held = []proto.Counter{{Name: "qps", Value: uint64(held.qps)}, {Name: "mrs", Value: uint64(held.mrs)},
		{Name: "mapped_bytes", Value: held.bytes}, {Name: "queue_bytes", Value: held.queue}}
	l := t.limits
	st.Limits = []proto.Counter{{Name: "max_clients", Value: uint64(l.MaxClients)}, {Name: "max_qps", Value: uint64(l.MaxQPs)},
		{Name: "max_mrs", Value: uint64(l.MaxMRs)}, {Name: "max_mapped_bytes", Value: l.MaxMappedBytes},
		{Name: "max_queue_bytes", Value: l.MaxQueueBytes}}
	st.Counts = protoCounters(counts.Counters())
	return st
}

// protoCounters converts named values for the wire.
func protoCounters(cs []ibv.Counter) []proto.Counter {
	out := make([]proto.Counter, len(cs))
	for i, c := range cs {
		out[i] = proto.Counter{Name: c.Name, Value: c.Value}
	}
	return out
}
