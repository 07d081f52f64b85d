// Tenants: two sockets of one daemon, each serving its own NIC. A client
// of one cannot list, open or see the other's NICs, clients or QPs, nor
// collide with its rdma_cm ports; each tenant's limits bound its clients
// together and no other tenant's; peers a tenant does not name are
// refused.

package server_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

// startTenants runs rnic0 on the host's socket, rnic1 as tenant a's and
// rnic2 as tenant b's.
func startTenants(t *testing.T, a, b server.TenantLimits) *rnicdtest.Daemon {
	t.Helper()
	return rnicdtest.Start(t, rnicdtest.Options{NICs: 3, Tenants: []server.TenantConfig{
		{Name: "a", Devices: []string{"rnic1"}, Limits: a},
		{Name: "b", Devices: []string{"rnic2"}, Limits: b},
	}})
}

func spec(name, sock string) ibv.Spec {
	return ibv.Spec{Backend: ibv.BackendDaemon, Name: name, Socket: sock}
}

func deviceNames(st *client.Stat) []string {
	var out []string
	for _, d := range st.Devices {
		out = append(out, d.Name)
	}
	return out
}

func queryStat(t *testing.T, sock string) *client.Stat {
	t.Helper()
	st, err := client.QueryStat(sock)
	if err != nil {
		t.Fatalf("stat of %s: %v", sock, err)
	}
	return st
}

// TestTenantDevices: each socket lists and opens its own NICs only.
func TestTenantDevices(t *testing.T) {
	d := startTenants(t, server.TenantLimits{}, server.TenantLimits{})
	socks := map[string]string{"host": d.Socket, "a": d.TenantSockets["a"], "b": d.TenantSockets["b"]}
	own := map[string]string{"host": "rnic0", "a": "rnic1", "b": "rnic2"}
	for who, sock := range socks {
		if got := deviceNames(queryStat(t, sock)); !slices.Equal(got, []string{own[who]}) {
			t.Errorf("%s's socket lists %v, want [%s]", who, got, own[who])
		}
		for _, name := range []string{"rnic0", "rnic1", "rnic2"} {
			dev, err := ibv.Open(spec(name, sock))
			if name == own[who] {
				if err != nil {
					t.Errorf("%s opens its own %s: %v", who, name, err)
					continue
				}
				dev.Close()
				continue
			}
			if err == nil {
				dev.Close()
				t.Errorf("%s opened %s, another's NIC", who, name)
			} else if !errors.Is(err, proto.ErrNoDevice) {
				t.Errorf("%s opening %s: %v, want ErrNoDevice", who, name, err)
			}
		}
	}
	// A host port goes to the tenant's own NICs only, as OPEN does.
	r := dial(t, socks["a"])
	if msg := r.expect(proto.OpAttachHostPort, &proto.AttachHostPortReq{Device: "rnic2"}, proto.StatusNoDevice, 0); !strings.Contains(msg, "rnic2") {
		t.Errorf("tenant a attaching a host port to b's NIC: %q", msg)
	}
}

// TestTenantStat: a tenant's rnic stat shows its own clients, QPs and
// tenant only (although its uid, root, sees every client on the host's
// socket); the host's shows all, with each client's tenant.
func TestTenantStat(t *testing.T) {
	d := startTenants(t, server.TenantLimits{}, server.TenantLimits{})
	_, qpsA := clientWithQPs(t, spec("rnic1", d.TenantSockets["a"]), 2)
	_, qpsB := clientWithQPs(t, spec("rnic2", d.TenantSockets["b"]), 3)

	// The host asks first: a stat client's session is reaped after its
	// socket closes, so tenant a's asking could still be listed.
	host := queryStat(t, d.Socket)
	st := queryStat(t, d.TenantSockets["a"])
	if len(st.Clients) != 1 || st.Clients[0].Device != "rnic1" || st.Clients[0].QPs != 2 {
		t.Errorf("tenant a sees clients %+v, want only its own (rnic1, 2 QPs)", st.Clients)
	}
	for _, q := range st.QPs {
		if slices.Contains(qpsB, q.QPN) && !slices.Contains(qpsA, q.QPN) {
			t.Errorf("tenant a sees b's QP %#x", q.QPN)
		}
	}
	if len(st.QPs) != 2 {
		t.Errorf("tenant a sees %d QPs, want its 2", len(st.QPs))
	}
	if len(st.Counters) != 1 || st.Counters[0].Tenant != "a" {
		t.Errorf("tenant a sees the counters of %+v, want its own client's", st.Counters)
	}
	if len(st.Tenants) != 1 || st.Tenants[0].Name != "a" || !slices.Equal(st.Tenants[0].Devices, []string{"rnic1"}) {
		t.Errorf("tenant a sees tenants %+v, want itself only", st.Tenants)
	}
	if len(st.Daemon.Counters) != 0 {
		t.Errorf("tenant a sees the daemon's counters (every tenant's sum): %v", st.Daemon.Counters)
	}
	if held := counter(st.Tenants[0].Held, "qps"); held != 2 {
		t.Errorf("tenant a holds %d QPs by its stat, want 2", held)
	}

	if got := names(st.AllDevices); !slices.Equal(got, []string{"rnic1"}) {
		t.Errorf("tenant a's STAT_ALL_DEVICES lists %v, want its rnic1", got)
	}
	if got := names(host.AllDevices); !slices.Equal(got, []string{"rnic0", "rnic1", "rnic2"}) {
		t.Errorf("the host's STAT_ALL_DEVICES lists %v, want every NIC", got)
	}
	if len(host.Clients) != 2 || len(host.QPs) != 5 {
		t.Errorf("the host's socket sees %d clients and %d QPs, want both tenants' (2, 5)", len(host.Clients), len(host.QPs))
	}
	var names []string
	for _, tn := range host.Tenants {
		names = append(names, tn.Name)
	}
	if !slices.Equal(names, []string{"", "a", "b"}) {
		t.Errorf("the host's socket sees tenants %q, want the host's, a and b", names)
	}
	var tenantsOf []string
	for _, c := range host.Counters {
		tenantsOf = append(tenantsOf, c.Tenant)
	}
	slices.Sort(tenantsOf)
	if !slices.Equal(tenantsOf, []string{"a", "b"}) {
		t.Errorf("the host's socket sees clients of tenants %q, want a and b", tenantsOf)
	}
}

func names(ds []proto.StatDevice) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name)
	}
	return out
}

func counter(cs []proto.Counter, name string) uint64 {
	for _, c := range cs {
		if c.Name == name {
			return c.Value
		}
	}
	return 1<<64 - 1
}

// TestTenantPorts: rdma_cm port reservations are per tenant, as the
// kernel's are per network namespace: b binds the port a bound (and
// learns nothing of a's).
func TestTenantPorts(t *testing.T) {
	d := startTenants(t, server.TenantLimits{}, server.TenantLimits{})
	bind := func(sock, nic string) (proto.Status, string) {
		r := dial(t, sock)
		r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: nic}, proto.StatusOK)
		st, body := r.request(proto.OpCMBind, &proto.CMBindReq{PortSpace: proto.PortSpaceTCP, Port: 18515})
		return st, string(body)
	}
	if st, msg := bind(d.TenantSockets["a"], "rnic1"); st != proto.StatusOK {
		t.Fatalf("tenant a binds port 18515: %d %s", st, msg)
	}
	if st, msg := bind(d.TenantSockets["b"], "rnic2"); st != proto.StatusOK {
		t.Errorf("tenant b binds port 18515 too: %d %s, want it free in b's table", st, msg)
	}
	// Within a tenant the wildcard binds still clash.
	if st, _ := bind(d.TenantSockets["a"], "rnic1"); st == proto.StatusOK {
		t.Errorf("a second client of tenant a bound a's port 18515")
	}
}

// TestTenantLimits: a tenant's QPs, MRs and clients are bounded over all
// its clients; the other tenant is not touched by it.
func TestTenantLimits(t *testing.T) {
	d := startTenants(t, server.TenantLimits{MaxQPs: 3, MaxClients: 2, MaxMRs: 1}, server.TenantLimits{})
	clientWithQPs(t, spec("rnic1", d.TenantSockets["a"]), 2)
	second, err := ibv.Open(spec("rnic1", d.TenantSockets["a"]))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	pd, err := second.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := second.CreateCQ(4)
	if err != nil {
		t.Fatal(err)
	}
	init := ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}
	if _, err := second.CreateQP(pd, init); err != nil {
		t.Fatalf("tenant a's third QP: %v", err)
	}
	_, err = second.CreateQP(pd, init)
	if !errors.Is(err, proto.ErrLimit) || !strings.Contains(err.Error(), "tenant a") || !strings.Contains(err.Error(), "max-qps") {
		t.Errorf("tenant a's fourth QP: %v, want the tenant's QP limit named", err)
	}
	for i := range 2 {
		buf, err := second.AllocBuffer(4096)
		if err != nil {
			t.Fatal(err)
		}
		_, err = second.RegMR(pd, buf.Bytes(), 0)
		if i == 0 && err != nil {
			t.Fatalf("tenant a's first MR: %v", err)
		}
		if i == 1 && (!errors.Is(err, proto.ErrLimit) || !strings.Contains(err.Error(), "max-mrs")) {
			t.Errorf("tenant a's second MR: %v, want the tenant's MR limit", err)
		}
	}
	if third, err := ibv.Open(spec("rnic1", d.TenantSockets["a"])); err == nil {
		third.Close()
		t.Errorf("tenant a's third client was served, beyond max-clients 2")
	} else if !errors.Is(err, proto.ErrLimit) || !strings.Contains(err.Error(), "tenant a") {
		t.Errorf("tenant a's third client: %v, want the tenant's client limit", err)
	}
	// b is not bounded by a's limits.
	clientWithQPs(t, spec("rnic2", d.TenantSockets["b"]), 5)
	clientWithQPs(t, spec("rnic2", d.TenantSockets["b"]), 1)
	clientWithQPs(t, spec("rnic2", d.TenantSockets["b"]), 1)
}

// TestTenantPeers: a tenant that names its peers refuses any other,
// root included.
func TestTenantPeers(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2, Tenants: []server.TenantConfig{
		{Name: "pod", Devices: []string{"rnic1"}, UIDs: []uint32{54321}, GIDs: []uint32{54321}}}})
	_, err := ibv.Open(spec("rnic1", d.TenantSockets["pod"]))
	if !errors.Is(err, verbs.ErrPermission) || !strings.Contains(err.Error(), "tenant pod") {
		t.Errorf("a client of another uid on a tenant of uid 54321: %v, want refused", err)
	}
	if n := d.Server.Stats().ClientsRefused; n != 1 {
		t.Errorf("clients refused: %d, want 1", n)
	}
}

// TestTenantReregBytes: an MR re-registered over a bigger window is
// charged the new window and gives it back whole when deregistered, to
// its tenant's budget and to the uid's and daemon's (which counted the
// first window at registration and gave back the last at deregistration).
func TestTenantReregBytes(t *testing.T) {
	d := startTenants(t, server.TenantLimits{MaxMappedBytes: 64 << 20}, server.TenantLimits{})
	_, bytes0, _ := d.Server.Mapped()
	r := dial(t, d.TenantSockets["a"])
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic1"}, proto.StatusOK)
	_, body := r.request(proto.OpAllocPD, &proto.Empty{})
	pd := decode(t, body, &proto.Handle{}).H
	fd := arena(t, 1<<24, true)
	rw := uint32(memory.LocalWrite | memory.RemoteWrite)
	_, body = r.request(proto.OpRegMRWindow, &proto.RegMRWindowReq{PD: pd, Access: rw, Offset: 0, Length: 4096, IOVA: 0x1000}, fd)
	mr := decode(t, body, &proto.RegMRReply{})
	_, _, held, _ := d.Server.TenantHeld("a")
	r.expect(proto.OpReregMRWindow, &proto.ReregMRWindowReq{MR: mr.MR, Flags: proto.ReregTranslation, PD: pd, Access: rw,
		Offset: 1 << 20, Length: 1 << 20, IOVA: 0x1000}, proto.StatusOK, fd)
	if _, _, now, _ := d.Server.TenantHeld("a"); now != held-4096+1<<20 {
		t.Errorf("tenant a holds %d bytes after the rereg over 1 MiB (%d before), want the new window's", now, held)
	}
	r.expect(proto.OpDeregMR, &proto.Handle{H: mr.MR}, proto.StatusOK)
	if _, _, now, _ := d.Server.TenantHeld("a"); now != held-4096 {
		t.Errorf("tenant a holds %d bytes after the dereg, want %d", now, held-4096)
	}
	if _, bytes1, _ := d.Server.Mapped(); bytes1 != bytes0+held-4096 {
		t.Errorf("the daemon counts %d bytes mapped after the dereg, want %d (the session's rings)", bytes1, bytes0+held-4096)
	}
}

// TestTenantPerUIDLimits: the per-uid limits count a uid's clients in each
// tenant apart (every pod's root is uid 0): tenant a's clients at the
// caps of their uid leave tenant b's clients of that uid theirs.
func TestTenantPerUIDLimits(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 3, Limits: server.Limits{MaxClientsPerUID: 1, MaxMRsPerUID: 1},
		Tenants: []server.TenantConfig{{Name: "a", Devices: []string{"rnic1"}}, {Name: "b", Devices: []string{"rnic2"}}}})
	regMR := func(dev ibv.Device) error {
		pd, err := dev.AllocPD()
		if err != nil {
			return err
		}
		buf, err := dev.AllocBuffer(4096)
		if err != nil {
			return err
		}
		_, err = dev.RegMR(pd, buf.Bytes(), 0)
		return err
	}
	a, err := ibv.Open(spec("rnic1", d.TenantSockets["a"]))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := regMR(a); err != nil {
		t.Fatalf("tenant a's MR: %v", err)
	}
	if a2, err := ibv.Open(spec("rnic1", d.TenantSockets["a"])); err == nil {
		a2.Close()
		t.Fatal("tenant a's second client of one uid was served beyond --max-clients-per-uid 1")
	}
	b, err := ibv.Open(spec("rnic2", d.TenantSockets["b"]))
	if err != nil {
		t.Fatalf("tenant b's client of the uid tenant a has at its cap: %v", err)
	}
	defer b.Close()
	if err := regMR(b); err != nil {
		t.Errorf("tenant b's MR with tenant a's uid at its MR cap: %v", err)
	}
}
