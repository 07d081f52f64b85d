package server

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// Port 0 binds to distinct ephemeral ports; a bound port is refused to a
// second bind that overlaps it (the same address or a wildcard on either
// side) with verbs.ErrBusy, whoever asks, and is free again once released;
// binds of one port on two addresses coexist; port spaces are apart.
func TestPortTableBind(t *testing.T) {
	var tb portTable
	a, b := &Session{}, &Session{}
	wild := netip.Addr{}
	ip2, ip3 := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")
	seen := map[uint16]bool{}
	for range 50 {
		x, err := tb.bind(a, proto.PortSpaceTCP, wild, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		p := x.key.port
		if p < ephemeralFirst || p >= ephemeralFirst+ephemeralCount || seen[p] {
			t.Fatalf("ephemeral port %d: out of range or given twice", p)
		}
		seen[p] = true
	}
	x, err := tb.bind(a, proto.PortSpaceTCP, ip2, 7000, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr netip.Addr
		ps   uint8
		want error // verbs.ErrBusy: EADDRINUSE; ErrAddrNotAvail: EADDRNOTAVAIL
	}{{ip2, proto.PortSpaceTCP, verbs.ErrBusy}, {wild, proto.PortSpaceTCP, proto.ErrAddrNotAvail},
		{ip3, proto.PortSpaceTCP, nil}, {ip2, proto.PortSpaceUDP, nil}} {
		_, err := tb.bind(b, c.ps, c.addr, 7000, 100)
		if (c.want == nil && err != nil) || (c.want != nil && !errors.Is(err, c.want)) ||
			(c.want == verbs.ErrBusy && errors.Is(err, proto.ErrAddrNotAvail)) {
			t.Errorf("bind %v port space %d port 7000 over %v: %v, want %v", c.addr, c.ps, ip2, err, c.want)
		}
	}
	if _, err := tb.bind(b, proto.PortSpaceTCP, wild, 7002, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.bind(a, proto.PortSpaceTCP, ip2, 7002, 100); !errors.Is(err, proto.ErrAddrNotAvail) {
		t.Errorf("bind %v over a wildcard bind: %v, want ErrAddrNotAvail", ip2, err)
	}
	if err := tb.release(b, x.id); !errors.Is(err, proto.ErrBadHandle) {
		t.Errorf("release of another session's binding: %v, want ErrBadHandle", err)
	}
	if err := tb.release(a, x.id); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.bind(b, proto.PortSpaceTCP, ip2, 7000, 100); err != nil {
		t.Errorf("bind after release: %v", err)
	}
	tb.releaseAll(b)
	if _, err := tb.bind(a, proto.PortSpaceTCP, wild, 7000, 100); err != nil {
		t.Errorf("bind after the other session's end: %v", err)
	}
}

// A session holds at most its limit of reservations.
func TestPortTableLimit(t *testing.T) {
	var tb portTable
	s := &Session{}
	for range 3 {
		if _, err := tb.bind(s, proto.PortSpaceTCP, netip.Addr{}, 0, 3); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tb.bind(s, proto.PortSpaceTCP, netip.Addr{}, 0, 3); !errors.Is(err, proto.ErrLimit) {
		t.Fatalf("bind past the limit: %v, want ErrLimit", err)
	}
}

// A connect to a port bound but not yet listened on waits for the
// listener (qperf 0.4.11 announces its port before rdma_listen); to a
// port nobody bound it goes at once.
func TestPortTableAwaitListen(t *testing.T) {
	var tb portTable
	s := &Session{}
	ip2 := netip.MustParseAddr("127.0.0.2")
	start := time.Now()
	tb.awaitListen(context.Background(), proto.PortSpaceTCP, ip2, 7001)
	if d := time.Since(start); d >= listenGrace {
		t.Fatalf("a connect to an unbound port waited %v", d)
	}
	if _, err := tb.bind(s, proto.PortSpaceTCP, netip.Addr{}, 7001, 10); err != nil {
		t.Fatal(err)
	}
	var listened atomic.Bool
	go func() {
		time.Sleep(100 * time.Millisecond)
		listened.Store(true)
		tb.listened(proto.PortSpaceTCP, 7001)
	}()
	tb.awaitListen(context.Background(), proto.PortSpaceTCP, ip2, 7001)
	if !listened.Load() {
		t.Fatal("a connect to a bound port went before its listener")
	}
	if tb.unlistened(proto.PortSpaceTCP, ip2, 7001) {
		t.Fatal("the port still counts as not listened on")
	}
}

// A connect to a port whose listener a live client just closed waits for
// it to be bound and listened on again (perftest -R's second listen); once
// that client's session ended, or for a port never listened on, it goes at
// once.
func TestPortTableAwaitRelisten(t *testing.T) {
	var tb portTable
	s := &Session{}
	ip2 := netip.MustParseAddr("127.0.0.2")
	quick := func(what string) {
		t.Helper()
		start := time.Now()
		tb.awaitListen(context.Background(), proto.PortSpaceTCP, ip2, 7002)
		if d := time.Since(start); d >= listenGrace {
			t.Fatalf("a connect to %s waited %v", what, d)
		}
	}
	b, err := tb.bind(s, proto.PortSpaceTCP, netip.Addr{}, 7002, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.release(s, b.id); err != nil {
		t.Fatal(err)
	}
	quick("a port bound and given back, never listened on")

	if b, err = tb.bind(s, proto.PortSpaceTCP, netip.Addr{}, 7002, 10); err != nil {
		t.Fatal(err)
	}
	tb.listened(proto.PortSpaceTCP, 7002)
	if err := tb.release(s, b.id); err != nil {
		t.Fatal(err)
	}
	var relistened atomic.Bool
	go func() {
		time.Sleep(100 * time.Millisecond)
		if _, err := tb.bind(s, proto.PortSpaceTCP, netip.Addr{}, 7002, 10); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
		relistened.Store(true)
		tb.listened(proto.PortSpaceTCP, 7002)
	}()
	tb.awaitListen(context.Background(), proto.PortSpaceTCP, ip2, 7002)
	if !relistened.Load() {
		t.Fatal("a connect to a port whose listener was just closed went before it listened again")
	}
	tb.releaseAll(s) // its listener given back with its session
	quick("a port whose client is gone")
}

// fakeListener is a CM listener that only counts its Close.
type fakeListener struct {
	port   uint16
	closed *int
}

func (l fakeListener) Port() uint16                                  { return l.port }
func (l fakeListener) Accept(context.Context) (ibv.CMRequest, error) { return nil, context.Canceled }
func (l fakeListener) Close() error                                  { *l.closed++; return nil }

// A listen keeps off ports another process bound: a port given is refused
// (ErrBusy: EADDRINUSE), one the CM picked for port 0 is given back and
// another taken; the binding process itself listens on its port, and the
// port then counts as listened on.
func TestListenFree(t *testing.T) {
	srv := &Server{host: &tenant{}}
	a := &Session{srv: srv, tenant: srv.host, cred: unix.Ucred{Pid: 10}}
	b := &Session{srv: srv, tenant: srv.host, cred: unix.Ucred{Pid: 20}}
	if _, err := srv.host.cmPorts.bind(a, proto.PortSpaceTCP, netip.Addr{}, 7100, 10); err != nil {
		t.Fatal(err)
	}
	closed, opened := 0, []uint16{}
	picks := []uint16{7100, 7101}
	open := func(port uint16) (*cmListener, uint16, error) {
		if port == 0 {
			port, picks = picks[0], picks[1:]
		}
		opened = append(opened, port)
		return &cmListener{l: fakeListener{port, &closed}}, port, nil
	}
	if _, _, err := b.listenFree(proto.PortSpaceTCP, 7100, open); !errors.Is(err, verbs.ErrBusy) || len(opened) != 0 {
		t.Fatalf("another process's listen on a bound port: %v (opened %v), want ErrBusy and none opened", err, opened)
	}
	if _, port, err := b.listenFree(proto.PortSpaceTCP, 0, open); err != nil || port != 7101 || closed != 1 {
		t.Fatalf("port 0 where the CM picked a bound port: port %d, %v, %d closed; want 7101 and the bound one closed",
			port, err, closed)
	}
	if _, _, err := a.listenFree(proto.PortSpaceTCP, 7100, open); err != nil {
		t.Fatalf("the binding process's own listen: %v", err)
	}
	if srv.host.cmPorts.unlistened(proto.PortSpaceTCP, netip.Addr{}, 7100) {
		t.Fatal("the port does not count as listened on")
	}
}

// A port the kernel's TCP holds (a listener, or a connection's ephemeral
// port) is not free for an rdma_cm bind of port 0: an iWARP NIC's listen
// on it would fail after the bind promised it.
func TestKernelTCPFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := uint16(l.Addr().(*net.TCPAddr).Port)
	if kernelTCPFree(busy) {
		t.Errorf("port %d, which a kernel listener holds, looks free", busy)
	}
	l.Close()
	if !kernelTCPFree(busy) {
		t.Errorf("port %d still looks busy after its listener closed", busy)
	}
}
