// Counters per client: they move with what each client does (work
// requests, completions, doorbells, failed requests) and only for it, and
// a tenant's totals keep a client's after it leaves.

package server_test

import (
	"testing"
	"time"

	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/server"
)

// countersOf returns the counters of the client of tenant that opened
// device, by stat of sock.
func countersOf(t *testing.T, sock, tenant, device string) []proto.Counter {
	t.Helper()
	st := queryStat(t, sock)
	ids := map[uint64]string{}
	for _, c := range st.Clients {
		ids[c.ID] = c.Device
	}
	for _, c := range st.Counters {
		if c.Tenant == tenant && ids[c.ID] == device {
			return c.Counters
		}
	}
	t.Fatalf("no client of tenant %q on %s in %+v", tenant, device, st.Counters)
	return nil
}

func tenantNamed(st *client.Stat, name string) *proto.StatTenant {
	for i := range st.Tenants {
		if st.Tenants[i].Name == name {
			return &st.Tenants[i]
		}
	}
	return nil
}

func TestClientCounters(t *testing.T) {
	d := startTenants(t, server.TenantLimits{}, server.TenantLimits{})
	busy := newGoodPair(t, spec("rnic1", d.TenantSockets["a"]))
	idle, _ := clientWithQPs(t, spec("rnic2", d.TenantSockets["b"]), 1)
	const writes = 7
	for range writes {
		busy.write(t)
	}
	if _, err := idle.QueryPort(9); err == nil {
		t.Fatal("QUERY_PORT of port 9 succeeded")
	}

	a := countersOf(t, d.Socket, "a", "rnic1")
	for _, want := range []struct {
		name     string
		min, max uint64
	}{
		{"send_wrs", writes, writes}, {"recv_wrs", 0, 0}, {"completions", writes, writes},
		{"doorbells", 1, writes}, {"request_errors", 0, 0}, {"client_errors", 0, 0},
		{"mrs_registered", 2, 2}, {"bytes_registered", 2 * 4096, 2 * 4096},
	} {
		if v := counter(a, want.name); v < want.min || v > want.max {
			t.Errorf("busy client's %s = %d, want %d..%d", want.name, v, want.min, want.max)
		}
	}
	b := countersOf(t, d.Socket, "b", "rnic2")
	if v := counter(b, "send_wrs"); v != 0 {
		t.Errorf("idle client's send_wrs = %d, want 0", v)
	}
	if v := counter(b, "request_errors"); v != 1 {
		t.Errorf("idle client's request_errors = %d, want 1 (QUERY_PORT 9)", v)
	}

	// Its tenant keeps the busy client's counts after it leaves.
	busy.dev.Close()
	st := queryStat(t, d.Socket)
	// The daemon reaps it on its own time.
	for deadline := time.Now().Add(10 * time.Second); tenantNamed(st, "a").Clients != 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		st = queryStat(t, d.Socket)
	}
	ta := tenantNamed(st, "a")
	if ta == nil || ta.Clients != 0 || counter(ta.Counts, "send_wrs") != writes || counter(ta.Held, "qps") != 0 {
		t.Errorf("tenant a after its client left: %+v, want no client, no QP held, %d send WRs", ta, writes)
	}
	if tb := tenantNamed(st, "b"); tb == nil || tb.Clients != 1 || counter(tb.Counts, "send_wrs") != 0 {
		t.Errorf("tenant b: %+v, want its one idle client", tb)
	}
}
