// FuzzSocket: the daemon as a hostile local process meets it, through its
// real socket and the rings it shares (fuzzclient_test.go plays each
// input). After every input the daemon must have answered every request
// in time, reaped the session down to the last descriptor and mapped byte,
// and still serve: a new client opens the device and queries its port,
// and a WRITE between two good QPs of a long-lived client lands. The NIC
// is a tenant's, served on the tenant's socket within tenant limits, so
// the tenant's accounting is played too (and must come back whole).
// FuzzHandle (fuzz_test.go) reaches the handlers faster; this one reaches
// what only a connection has: descriptors, the doorbell, the drainers and
// movers of the rings, the end of a session.

package server_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rdmacm"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

// fuzzDaemon is the daemon every input of a fuzz worker meets, with what
// it held before the first.
type fuzzDaemon struct {
	srv  *server.Server
	sock string
	gid  netip.Addr
	good *goodPair
	base fuzzBaseline
}

// fuzzBaseline is what the daemon holds with only the good client
// connected.
type fuzzBaseline struct {
	clients       int
	fds           []string // /proc/self/fd's targets, sorted
	mrs           int
	mapped, queue uint64
	goroutines    int
	tenant        [4]uint64 // TenantHeld
}

func startFuzzDaemon(f *testing.F) *fuzzDaemon {
	n, err := rnicdtest.OpenNIC("rnic0", 0)
	if err != nil {
		f.Fatal(err)
	}
	// rdma_cm, but no side channel on the kernel's TCP: fuzzed addresses
	// must not leave loopback (the NIC's own sockets, bound to a 127/8
	// address, cannot).
	dev, err := rdmacm.LocalWith(n, rdmacm.Config{}, nic.IBVOptions{})
	if err != nil {
		n.Close()
		f.Fatal(err)
	}
	f.Cleanup(func() { dev.Close() })
	// Small limits: an input piles objects up to them, not beyond.
	srv, err := server.New(server.Config{Devices: []ibv.Device{dev}, Limits: server.Limits{
		MaxQPs: 8, MaxMRs: 8, MaxMRBytes: 64 << 20, MaxRingBytes: 16 << 20, MaxObjects: 32, MaxCMIDs: 8, MaxSockets: 4},
		Tenants: []server.TenantConfig{{Name: fuzzTenant, Devices: []string{"rnic0"}, Limits: server.TenantLimits{
			MaxClients: 16, MaxQPs: 12, MaxMRs: 12, MaxMappedBytes: 96 << 20}}}})
	if err != nil {
		f.Fatal(err)
	}
	sock := filepath.Join(f.TempDir(), "tenant.sock")
	l, err := server.ListenAs(sock, server.SocketAccess{Mode: 0o600, UID: -1, GID: -1})
	if err != nil {
		f.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.ServeTenant(fuzzTenant, l)
	}()
	f.Cleanup(func() {
		srv.Close()
		<-served
	})
	d := &fuzzDaemon{srv: srv, sock: sock, gid: dev.GIDs()[0]}
	d.good = newGoodPair(f, ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic0", Socket: sock})
	d.good.write(f) // its first WRITE maps what later ones reuse
	d.base = d.baseline()
	return d
}

// fuzzTenant is the tenant whose NIC the fuzz client meets.
const fuzzTenant = "fuzz"

func (d *fuzzDaemon) baseline() fuzzBaseline {
	mrs, mapped, queue := d.srv.Mapped()
	return fuzzBaseline{clients: len(d.srv.Clients()), fds: openFDTargets(), mrs: mrs, mapped: mapped, queue: queue,
		goroutines: runtime.NumGoroutine(), tenant: d.tenantHeld()}
}

func (d *fuzzDaemon) tenantHeld() [4]uint64 {
	qps, mrs, bytes, queue := d.srv.TenantHeld(fuzzTenant)
	return [4]uint64{uint64(qps), uint64(mrs), bytes, queue}
}

// openFDTargets lists what this process's descriptors are, sorted.
func openFDTargets() []string {
	ents, _ := os.ReadDir("/proc/self/fd")
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // the directory's own descriptor, closed by now
		}
		// Sockets and pipes are told apart by kind, not inode: the
		// kernel may give a new one the number of an old one.
		if i := strings.IndexByte(target, '['); i > 0 {
			target = target[:i]
		}
		out = append(out, target)
	}
	slices.Sort(out)
	return out
}

// checkReaped waits until the daemon has reaped sessions more sessions
// since it had reaped before, every session but the good client's is gone
// and the daemon holds what it held before: descriptors, mappings, queue
// state, goroutines.
func (d *fuzzDaemon) checkReaped(t *testing.T, before, sessions uint64) {
	t.Helper()
	var why string
	deadline := time.Now().Add(replyWait)
	for {
		st := d.srv.Stats()
		mrs, mapped, queue := d.srv.Mapped()
		fds := openFDTargets()
		g := runtime.NumGoroutine()
		switch {
		case st.ClientsReaped-before < sessions || len(d.srv.Clients()) != d.base.clients:
			why = fmt.Sprintf("%d of %d sessions reaped, %d clients connected (%d before)",
				st.ClientsReaped-before, sessions, len(d.srv.Clients()), d.base.clients)
		case mrs != d.base.mrs || mapped != d.base.mapped || queue != d.base.queue:
			why = fmt.Sprintf("%d MRs, %d bytes mapped, %d bytes of queues (before: %d, %d, %d)",
				mrs, mapped, queue, d.base.mrs, d.base.mapped, d.base.queue)
		case d.tenantHeld() != d.base.tenant:
			why = fmt.Sprintf("tenant holds QPs, MRs, bytes, queue %v (before: %v)", d.tenantHeld(), d.base.tenant)
		case !slices.Equal(fds, d.base.fds):
			why = fmt.Sprintf("descriptors %q, before %q", fds, d.base.fds)
		case g > d.base.goroutines+4:
			why = fmt.Sprintf("%d goroutines, %d before", g, d.base.goroutines)
		default:
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("after the client's end: %s\n%s", why, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

// checkServes: a new client opens the device and queries its port, in
// time.
func (d *fuzzDaemon) checkServes(t *testing.T) {
	t.Helper()
	c := dialFuzz(t, d.sock)
	defer c.close()
	if st, body, _ := c.requestMsg(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}); st != proto.StatusOK {
		t.Fatalf("a new client's OPEN: status %d %q", st, body)
	}
	if st, body, _ := c.requestMsg(proto.OpQueryPort, &proto.QueryPortReq{Port: 1}); st != proto.StatusOK {
		t.Fatalf("a new client's QUERY_PORT: status %d %q", st, body)
	}
}

// goodPair is a well-behaved client with two RC QPs connected to each
// other: its WRITEs must land whatever the fuzz client does.
type goodPair struct {
	dev    ibv.Device
	qp     [2]ibv.QP
	cq     ibv.CQ
	mr     [2]ibv.MR
	buf    [2][]byte
	serial byte
}

func newGoodPair(f testing.TB, spec ibv.Spec) *goodPair {
	dev, err := ibv.Open(spec)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { dev.Close() })
	g := &goodPair{dev: dev}
	pd, err := dev.AllocPD()
	if err != nil {
		f.Fatal(err)
	}
	if g.cq, err = dev.CreateCQ(16); err != nil {
		f.Fatal(err)
	}
	for i := range 2 {
		b, err := dev.AllocBuffer(4096)
		if err != nil {
			f.Fatal(err)
		}
		g.buf[i] = b.Bytes()
		if g.mr[i], err = dev.RegMR(pd, g.buf[i], memory.LocalWrite|memory.RemoteWrite); err != nil {
			f.Fatal(err)
		}
		if g.qp[i], err = dev.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: g.cq, RecvCQ: g.cq,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
			f.Fatal(err)
		}
	}
	av := verbs.AddressVector{DGID: dev.GIDs()[0], HopLimit: 64, PortNum: 1}
	for i, q := range g.qp {
		steps := []struct {
			attr verbs.QPAttr
			mask verbs.QPAttrMask
		}{
			{verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite},
				verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags},
			{verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: g.qp[1-i].QPN(), RQPSN: 1, AV: av, MaxDestRdAtomic: 1, MinRNRTimer: 1},
				verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer},
			{verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1},
				verbs.AttrState | verbs.AttrSQPSN | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrMaxQPRdAtomic},
		}
		for _, s := range steps {
			if err := q.Modify(&s.attr, s.mask); err != nil {
				f.Fatalf("good QP to %v: %v", s.attr.State, err)
			}
		}
	}
	return g
}

// write WRITEs a fresh pattern from the first QP's buffer into the
// second's and checks that it landed, in time.
func (g *goodPair) write(t testing.TB) {
	t.Helper()
	g.serial++
	want := bytes.Repeat([]byte{g.serial}, 256)
	copy(g.buf[0], want)
	err := g.qp[0].PostSend(&verbs.SendWR{ID: uint64(g.serial), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGL:        []verbs.SGE{{Addr: g.mr[0].Addr(), Length: uint32(len(want)), LKey: g.mr[0].LKey()}},
		RemoteAddr: g.mr[1].Addr(), RKey: g.mr[1].RKey()})
	if err != nil {
		t.Fatalf("the good client's WRITE: %v", err)
	}
	wcs := make([]verbs.WC, 1)
	for deadline := time.Now().Add(replyWait); g.cq.Poll(wcs) == 0; time.Sleep(50 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the good client's WRITE: no completion within %v", replyWait)
		}
	}
	if wcs[0].Status != verbs.WCSuccess || !bytes.Equal(g.buf[1][:len(want)], want) {
		t.Fatalf("the good client's WRITE: %v, data landed: %v", wcs[0].Status, bytes.Equal(g.buf[1][:len(want)], want))
	}
}

// fuzzSeeds are programs that reach far (open, register, create queues,
// connect a QP to itself, post into its rings, scribble), the same ending
// in the middle of a request, the recorded request bodies and WQE slots of
// proto's testdata/golden sent as they are. Each step is a step number of
// play and the bytes it reads.
func fuzzSeeds(f *testing.F) {
	all := ops()
	index := func(op proto.Op) byte { return byte(slices.Index(all, op)) }
	var reach []byte
	for _, step := range [][]byte{
		{1},                                     // OPEN
		{1, index(proto.OpAllocPD), 0, 1},       // ALLOC_PD, unchanged
		{4, 1, 0, 1},                            // REG_MR of 2 pages on the PD
		{5, 8, 1},                               // CREATE_CQ_ON of 9
		{6, 1, 0, 2, 2, 0, 0, 8, 8, 1, 1, 0, 1}, // an RC QP on the PD and the CQ
		{7, 0, 0, 0, 0, 0, 1},                   // to RTS, aimed at itself
	} {
		reach = append(reach, step...)
	}
	connected := len(reach)
	for _, step := range [][]byte{
		{8, 1, 1, 0, 1, 0, 1, 0, 0, 1, 2, 0, 0, 1}, // a signalled WRITE of 256 bytes into the SQ
		{9, 1, 0, 1, 1, 1, 1},                      // 2 receive WQEs into the RQ
		{10, 0, 16, 0xff, 0xff, 0xff, 0x7f, 0},     // the CQ's consumer index far ahead, and the bell
		{11, 2, 5, 0, 0, 0, 9, 0, 0, 0, 1, 1},      // bells 5 and 9, a byte on the doorbell
	} {
		reach = append(reach, step...)
	}
	f.Add(reach)
	f.Add(reach[:connected+21])               // the WRITE (it completes) and the receives only
	f.Add(append(slices.Clone(reach), 13, 0)) // ... and gone mid-request
	// memfds, a pipe, /dev/null, a socket with a REG_MR
	f.Add([]byte{1, 1, index(proto.OpAllocPD), 0, 1, 3, 3, 0, 0, 1, 0, 0, 2, 3, 1, index(proto.OpRegMR), 0, 1})
	golden := "../proto/testdata/golden"
	bodies, _ := filepath.Glob(filepath.Join(golden, "*.request.*.bin"))
	for _, path := range bodies {
		body, err := os.ReadFile(path)
		op, ok := opNamed(strings.SplitN(filepath.Base(path), ".", 2)[0])
		if err != nil || !ok || len(body) > 255 {
			continue
		}
		// reach's objects, a sealed memfd of 8 KiB, the recorded body
		f.Add(append(slices.Clone(reach[:connected]), append([]byte{3, 0, 0, 0, 0x20, 0, 0, 0, 0, index(op), byte(len(body))}, body...)...))
	}
	for i, name := range []string{"slot.send.1.bin", "slot.recv.1.bin"} {
		slot, err := os.ReadFile(filepath.Join(golden, name))
		if err != nil {
			continue
		}
		// reach's connected QP, the recorded slot written raw into its
		// SQ (i 0) or RQ (i 1)
		f.Add(append(slices.Clone(reach[:connected]), append([]byte{8, 1, byte(1 - i), 0, 0}, slot...)...))
	}
}

// opNamed returns the op whose name is name.
func opNamed(name string) (proto.Op, bool) {
	for _, op := range proto.Ops() {
		if op.String() == name {
			return op, true
		}
	}
	return 0, false
}

func FuzzSocket(f *testing.F) {
	d := startFuzzDaemon(f)
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		// No collection while an input runs: a descriptor the daemon
		// leaks must not be closed behind its back by a finalizer.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		before := d.srv.Stats().ClientsReaped
		c := dialFuzz(t, d.sock)
		c.avoid = []uint32{d.good.qp[0].QPN(), d.good.qp[1].QPN()}
		c.play(&program{b: in}, d.gid)
		c.close()
		d.checkServes(t)
		d.good.write(t)
		d.checkReaped(t, before, 2)
	})
}
