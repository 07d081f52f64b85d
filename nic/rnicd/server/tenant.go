// Tenants: several sockets of one daemon, each serving its own set of NICs
// to its own clients. A tenant is what a network namespace is to the
// kernel: its clients open, list and see only its NICs, its clients and
// its rdma_cm port reservations, within budgets of its own. The daemon's
// first socket (Serve) is the host's: it serves the NICs no tenant has,
// and a client of uid 0 or the daemon's there sees every tenant.

package server

import (
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// TenantConfig describes a tenant.
type TenantConfig struct {
	// Name names the tenant in logs and rnic stat; it is unique and not
	// empty (the host's tenant has the empty name).
	Name string
	// Devices are the names of the Config.Devices only this tenant's
	// clients may open; a device belongs to at most one tenant.
	Devices []string
	// UIDs and GIDs, if either is set, are the peers (SO_PEERCRED) the
	// tenant's socket serves: a client whose uid is not in UIDs and whose
	// gid is not in GIDs is refused, root included. Empty: whoever may
	// connect to the socket (its file mode decides).
	UIDs, GIDs []uint32
	// Limits bound all the tenant's clients together; zero fields are
	// unbounded (the per-client, per-uid and daemon limits still apply).
	Limits TenantLimits
}

// TenantLimits bound what the clients of one tenant hold together, so
// that one tenant cannot starve another of the daemon.
type TenantLimits struct {
	MaxClients int
	MaxQPs     int
	MaxMRs     int
	// MaxMappedBytes bounds the MR and ring memory the daemon maps for
	// the tenant's clients; MaxQueueBytes the daemon's own memory for
	// their QPs' queues.
	MaxMappedBytes uint64
	MaxQueueBytes  uint64
}

// tenantUID is a uid within a tenant: the per-uid limits count each
// tenant's users apart, since uid 0 of one pod is not uid 0 of another,
// and one must not exhaust what the other's may hold.
type tenantUID struct {
	t   *tenant
	uid uint32
}

// tenant is a TenantConfig at work.
type tenant struct {
	name   string
	devs   map[string]*device // what its clients may open and list
	uids   []uint32
	gids   []uint32
	limits TenantLimits
	// cmPorts are its rdma_cm port reservations: one table per tenant, as
	// the kernel has one per network namespace (cm_bind.go).
	cmPorts portTable
	// use is what its clients hold (budget.mu); clients is how many are
	// connected and gone sums the counters of those that left (both
	// changed under Server.mu).
	use     mapped
	clients int
	gone    clientCounts
}

// isHost reports whether t is the host's tenant (Serve's socket).
func (t *tenant) isHost() bool { return t.name == "" }

// newTenants builds the host's tenant and cfg.Tenants over devs, checking
// that names are unique and that each device exists and has one tenant.
func newTenants(cfg []TenantConfig, devs map[string]*device) (*tenant, map[string]*tenant, error) {
	owner := map[string]string{}
	byName := map[string]*tenant{}
	for _, tc := range cfg {
		if tc.Name == "" {
			return nil, nil, fmt.Errorf("rnicd: a tenant has no name")
		}
		if byName[tc.Name] != nil {
			return nil, nil, fmt.Errorf("rnicd: two tenants named %s", tc.Name)
		}
		t := &tenant{name: tc.Name, devs: map[string]*device{}, uids: slices.Clone(tc.UIDs),
			gids: slices.Clone(tc.GIDs), limits: tc.Limits}
		for _, n := range tc.Devices {
			d := devs[n]
			if d == nil {
				return nil, nil, fmt.Errorf("rnicd: tenant %s: no device %s", tc.Name, n)
			}
			if o, taken := owner[n]; taken {
				return nil, nil, fmt.Errorf("rnicd: device %s is tenant %s's and tenant %s's: a NIC has one tenant", n, o, tc.Name)
			}
			owner[n] = tc.Name
			t.devs[n] = d
		}
		byName[tc.Name] = t
	}
	host := &tenant{devs: map[string]*device{}}
	for n, d := range devs {
		if _, taken := owner[n]; !taken {
			host.devs[n] = d
		}
	}
	return host, byName, nil
}

// ServeTenant accepts the clients of tenant name on l, as Serve does for
// the host's; it closes l.
func (s *Server) ServeTenant(name string, l *net.UnixListener) error {
	t := s.tenants[name]
	if t == nil {
		l.Close()
		return fmt.Errorf("rnicd: no tenant %q", name)
	}
	return s.serve(l, t)
}

// admitPeer returns why t's socket refuses a client of uid and gid, or
// nil.
func (t *tenant) admitPeer(uid, gid uint32) error {
	if len(t.uids) == 0 && len(t.gids) == 0 {
		return nil
	}
	if slices.Contains(t.uids, uid) || slices.Contains(t.gids, gid) {
		return nil
	}
	return fmt.Errorf("tenant %s serves no client of uid %d gid %d (rnicd --tenant uid=, gid=): %w",
		t.name, uid, gid, verbs.ErrPermission)
}

// admitClient returns the error of the tenant's client cap that one more
// client would exceed, or nil. Server.mu is held.
func (t *tenant) admitClient() error {
	if n := t.limits.MaxClients; n > 0 && t.clients >= n {
		return fmt.Errorf("%w: %d clients of tenant %s (rnicd --tenant max-clients=)", proto.ErrLimit, n, t.name)
	}
	return nil
}

// takeCheck refuses d more for t beyond its limits. budget.mu is held.
func (t *tenant) takeCheck(d mapped) error {
	l := &t.limits
	who := " of tenant " + t.name
	switch {
	case l.MaxQPs > 0 && t.use.qps+d.qps > l.MaxQPs:
		return tenantError(l.MaxQPs, "QPs"+who, "max-qps")
	case l.MaxMRs > 0 && t.use.mrs+d.mrs > l.MaxMRs:
		return tenantError(l.MaxMRs, "MRs"+who, "max-mrs")
	case l.MaxMappedBytes > 0 && over(t.use.bytes, d.bytes, l.MaxMappedBytes):
		return tenantError(l.MaxMappedBytes, "bytes mapped"+who, "max-mapped-bytes")
	case l.MaxQueueBytes > 0 && over(t.use.queue, d.queue, l.MaxQueueBytes):
		return tenantError(l.MaxQueueBytes, "bytes of queue state"+who, "max-queue-bytes")
	}
	return nil
}

func tenantError[N int | uint64](n N, what, key string) error {
	return fmt.Errorf("%w: %s %s (rnicd --tenant %s=)", proto.ErrLimit, strconv.FormatUint(uint64(n), 10), what, key)
}

// seesTenant reports whether s may see tenant t in rnic stat: its own,
// or any from the host's socket with a uid that sees all.
func (s *Session) seesTenant(t *tenant) bool {
	return t == s.tenant || (s.tenant.isHost() && s.seesAll())
}
