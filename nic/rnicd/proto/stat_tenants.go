// Statistics per client and per tenant (rnic stat clients, tenants): what
// each client made the daemon do, and what each tenant (a socket of the
// daemon serving its own NICs) holds, may hold and did. Paged as the other
// stat listings are; a client sees the clients and tenant it may see
// (its own tenant's; every tenant from the host's socket with uid 0 or the
// daemon's).
//
//	STAT_CLIENT_COUNTERS  request StatPage  reply StatClientCountersReply  (After: last client ID)
//	STAT_TENANTS          request StatPage  reply StatTenantsReply         (After: tenants already got)
//	STAT_ALL_DEVICES      request StatPage  reply StatDevicesReply         (After: devices already got)
//
// STAT_DEVICES lists the devices the asker may open (its tenant's);
// STAT_ALL_DEVICES those of every tenant it sees (an administrator on the
// host's socket: all), for monitoring.

package proto

// Admin ops of clients' counters and tenants.
const (
	OpStatClientCounters Op = 0x0310
	OpStatTenants        Op = 0x0311
	OpStatAllDevices     Op = 0x0312
)

// MaxTenantDevices bounds the devices a StatTenant names.
const MaxTenantDevices = 256

func init() {
	registerOps([]opDecl{
		{OpStatClientCounters, "STAT_CLIENT_COUNTERS", Bodies{func() Message { return new(StatPage) }, func() Message { return new(StatClientCountersReply) }}},
		{OpStatTenants, "STAT_TENANTS", Bodies{func() Message { return new(StatPage) }, func() Message { return new(StatTenantsReply) }}},
		{OpStatAllDevices, "STAT_ALL_DEVICES", Bodies{func() Message { return new(StatPage) }, func() Message { return new(StatDevicesReply) }}},
	})
}

// StatClientCounters are one client's counters (requests, work requests,
// completions, doorbells, errors, ...) by name, and its tenant ("": the
// host's).
type StatClientCounters struct {
	ID       uint64
	Tenant   string
	Counters []Counter
}

func (m *StatClientCounters) Encode(w *Writer) {
	w.U64(m.ID)
	w.String(m.Tenant)
	putCounters(w, m.Counters)
}

func (m *StatClientCounters) Decode(r *Reader) {
	m.ID = r.U64()
	m.Tenant = r.String(MaxName)
	m.Counters = getCounters(r)
}

// StatClientCountersReply is a page of clients' counters, in ID order.
type StatClientCountersReply struct {
	Clients []StatClientCounters
	More    bool
}

func (m *StatClientCountersReply) Encode(w *Writer) { putPage(w, m.Clients, m.More) }

// An entry takes at least 16 bytes (ID, empty tenant, no counters).
func (m *StatClientCountersReply) Decode(r *Reader) { m.More = getPage(r, &m.Clients, "clients", 16) }

// StatTenant is a tenant: its devices, its clients now, what they hold
// (Held: qps, mrs, mapped_bytes, queue_bytes), its limits (Limits, 0:
// none) and the counters of its clients, those gone included (Counts,
// named as StatClientCounters').
type StatTenant struct {
	Name    string
	Devices []string
	Clients uint32
	Held    []Counter
	Limits  []Counter
	Counts  []Counter
}

func (m *StatTenant) Encode(w *Writer) {
	w.String(m.Name)
	w.U32(uint32(len(m.Devices)))
	for _, d := range m.Devices {
		w.String(d)
	}
	w.U32(m.Clients)
	putCounters(w, m.Held)
	putCounters(w, m.Limits)
	putCounters(w, m.Counts)
}

func (m *StatTenant) Decode(r *Reader) {
	m.Name = r.String(MaxName)
	n := r.U32()
	if n > MaxTenantDevices {
		r.fail("%d devices, at most %d", n, MaxTenantDevices)
		return
	}
	m.Devices = make([]string, 0, min(n, uint32(r.Remaining()/4)))
	for range n {
		m.Devices = append(m.Devices, r.String(MaxName))
		if r.Err() != nil {
			return
		}
	}
	m.Clients = r.U32()
	m.Held = getCounters(r)
	m.Limits = getCounters(r)
	m.Counts = getCounters(r)
}

// StatTenantsReply is a page of tenants, in name order (the host's, "",
// first).
type StatTenantsReply struct {
	Tenants []StatTenant
	More    bool
}

func (m *StatTenantsReply) Encode(w *Writer) { putPage(w, m.Tenants, m.More) }

// An entry takes at least 24 bytes (an empty name, no device, the client
// count, three empty counter lists).
func (m *StatTenantsReply) Decode(r *Reader) { m.More = getPage(r, &m.Tenants, "tenants", 24) }
