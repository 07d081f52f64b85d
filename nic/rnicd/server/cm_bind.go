// rdma_bind_addr's port reservations (CM_BIND, CM_UNBIND): the rdma_cm
// port spaces are the host's, so the table is the daemon's, shared by all
// its clients and NICs, as the kernel's bind lists are one per network
// namespace. A reservation belongs to the session that made it and goes
// with it.

package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

func init() {
	Register(proto.OpCMBind, handleCMBind)
	Register(proto.OpCMUnbind, handleCMUnbind)
}

// The ephemeral ports a bind of port 0 gets: 32768..61439, the range the
// daemon's CMs pick listener and source ports from.
const (
	ephemeralFirst = 0x8000
	ephemeralCount = 0x7000
)

type portKey struct {
	ps   uint8
	port uint16
}

// portBinding is one rdma_bind_addr: a port of a port space on an address
// (the zero Addr: every address).
type portBinding struct {
	id        uint32
	key       portKey
	addr      netip.Addr
	owner     *Session
	listening bool // a listener of the port exists (or existed)
}

// portTable is the daemon's bound ports. The zero value is ready.
type portTable struct {
	mu      sync.Mutex
	next    uint32
	byID    map[uint32]*portBinding
	used    map[portKey][]*portBinding
	perSess map[*Session]int
	closed  map[portKey]closedListen // listeners given back a moment ago (cm_relisten.go)
}

// conflicts says whether a bind of addr clashes with b, as the kernel's
// cma_check_port without RDMA_OPTION_ID_REUSEADDR: the same address, or
// either the wildcard.
func (b *portBinding) conflicts(addr netip.Addr) bool {
	return !addr.IsValid() || !b.addr.IsValid() || addr == b.addr
}

// bind reserves port (0: a free ephemeral one) of port space ps on addr
// for owner, which may hold at most limit reservations.
func (t *portTable) bind(owner *Session, ps uint8, addr netip.Addr, port uint16, limit int) (*portBinding, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID == nil {
		t.byID, t.used, t.perSess = map[uint32]*portBinding{}, map[portKey][]*portBinding{}, map[*Session]int{}
	}
	if t.perSess[owner] >= limit {
		return nil, limitError(limit, "bound rdma_cm IDs", "MaxCMIDs")
	}
	if port == 0 {
		if port = t.ephemeral(ps); port == 0 {
			return nil, fmt.Errorf("%w: every ephemeral rdma_cm port is bound", proto.ErrAddrNotAvail)
		}
	}
	k := portKey{ps, port}
	for _, b := range t.used[k] {
		switch {
		case !addr.IsValid() || !b.addr.IsValid(): // as cma_check_port: EADDRNOTAVAIL
			return nil, fmt.Errorf("%w: port %d is bound, one of the binds to the wildcard", proto.ErrAddrNotAvail, port)
		case addr == b.addr:
			return nil, fmt.Errorf("rnicd: rdma_cm port %d of %v is bound already: %w", port, addr, verbs.ErrBusy)
		}
	}
	for t.next++; t.next == 0 || t.byID[t.next] != nil; t.next++ {
	}
	delete(t.closed, k) // bound again: its listen is awaited as any bound port's
	b := &portBinding{id: t.next, key: k, addr: addr, owner: owner}
	t.byID[b.id] = b
	t.used[k] = append(t.used[k], b)
	t.perSess[owner]++
	return b, nil
}

// ephemeral picks a port of ps nobody has bound, from a random start as
// the kernel's cma_alloc_any_port does, or 0 if all are. Caller holds t.mu.
func (t *portTable) ephemeral(ps uint8) uint16 {
	start := rand.IntN(ephemeralCount)
	for i := range ephemeralCount {
		p := uint16(ephemeralFirst + (start+i)%ephemeralCount)
		if len(t.used[portKey{ps, p}]) == 0 && (ps != proto.PortSpaceTCP || kernelTCPFree(p)) {
			return p
		}
	}
	return 0
}

// release gives back owner's reservation id.
func (t *portTable) release(owner *Session, id uint32) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.byID[id]
	if b == nil || b.owner != owner {
		return fmt.Errorf("%w: CM binding %d", proto.ErrBadHandle, id)
	}
	t.noteClosed(b)
	t.drop(b)
	return nil
}

// releaseAll gives back every reservation of owner (its session ended).
func (t *portTable) releaseAll(owner *Session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range t.byID {
		if b.owner == owner {
			t.drop(b)
		}
	}
	t.forgetClosed(owner)
	delete(t.perSess, owner)
}

// drop removes b. Caller holds t.mu.
func (t *portTable) drop(b *portBinding) {
	delete(t.byID, b.id)
	l := t.used[b.key]
	for i, o := range l {
		if o == b {
			l = append(l[:i], l[i+1:]...)
			break
		}
	}
	if len(l) == 0 {
		delete(t.used, b.key)
	} else {
		t.used[b.key] = l
	}
	if t.perSess[b.owner]--; t.perSess[b.owner] <= 0 {
		delete(t.perSess, b.owner)
	}
}

// listened marks the bindings of port ps/port as listened on.
func (t *portTable) listened(ps uint8, port uint16) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range t.used[portKey{ps, port}] {
		b.listening = true
	}
}

// unlistened says whether port ps/port is bound on addr (or the wildcard)
// by someone who has not listened on it yet, or its listener was closed a
// moment ago by a client that may listen again (cm_relisten.go).
func (t *portTable) unlistened(ps uint8, addr netip.Addr, port uint16) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := portKey{ps, port}
	for _, b := range t.used[k] {
		if !b.listening && b.conflicts(addr) {
			return true
		}
	}
	return len(t.used[k]) == 0 && t.relistenDue(k, addr)
}

// boundByOther says whether port ps/port is bound by a process other than
// pid (a client's sessions, one per device it opened, share its pid).
func (t *portTable) boundByOther(ps uint8, port uint16, pid int32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range t.used[portKey{ps, port}] {
		if b.owner.cred.Pid != pid {
			return true
		}
	}
	return false
}

// listenFree opens a listener with open on port of ps that no other
// process has bound: a port given that another bound is refused
// (EADDRINUSE, as its bind would have been), a free one of port 0 that
// another bound meanwhile is given back and another taken. Clients that
// listen without binding first (the Go client) so keep off the ports the
// C library's rdma_bind_addr reserved.
func (s *Session) listenFree(ps uint8, port uint16, open func(uint16) (*cmListener, uint16, error)) (*cmListener, uint16, error) {
	t := &s.tenant.cmPorts
	if port != 0 && t.boundByOther(ps, port, s.cred.Pid) {
		return nil, 0, fmt.Errorf("rnicd: rdma_cm port %d is bound by another client: %w", port, verbs.ErrBusy)
	}
	for range 8 {
		l, got, err := open(port)
		if err != nil || port != 0 || !t.boundByOther(ps, got, s.cred.Pid) {
			if err == nil {
				t.listened(ps, got)
			}
			return l, got, err
		}
		l.close()
	}
	return nil, 0, fmt.Errorf("rnicd: no free rdma_cm port found: %w", verbs.ErrBusy)
}

// listenGrace bounds how long a connect waits for a bound port's listener.
const listenGrace = 2 * time.Second

// awaitListen waits, up to listenGrace or ctx's end, while port ps/port
// is bound on addr but not yet listened on. Programs that announce a
// bound port to their peer before rdma_listen (qperf 0.4.11's server
// sends rdma_get_src_port's port over its TCP channel first) race their
// peer's connect; the kernel's CM is quick enough that the listener wins
// in practice, the daemon's round trips are not, so its connects to a
// bound port give the listener that time, as to a port whose listener its
// live client closed a moment ago (cm_relisten.go). A port nobody bound,
// or one listened on, is connected to at once (no listener: REJECTED 8 at
// once).
func (t *portTable) awaitListen(ctx context.Context, ps uint8, addr netip.Addr, port uint16) {
	deadline := time.Now().Add(listenGrace)
	for t.unlistened(ps, addr.Unmap(), port) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// bindings is the per-session hook: the first bind of a session arranges
// for its reservations to go with it.
var bindings = struct {
	sync.Mutex
	hooked map[*Session]bool
}{hooked: map[*Session]bool{}}

func hookRelease(s *Session) {
	bindings.Lock()
	defer bindings.Unlock()
	if bindings.hooked[s] {
		return
	}
	bindings.hooked[s] = true
	s.OnClose(func() {
		s.tenant.cmPorts.releaseAll(s)
		bindings.Lock()
		delete(bindings.hooked, s)
		bindings.Unlock()
	})
}

func handleCMBind(s *Session, req *Request, rep *Reply) error {
	var m proto.CMBindReq
	if err := req.Decode(&m); err != nil {
		return err
	}
	if m.PortSpace != proto.PortSpaceTCP && m.PortSpace != proto.PortSpaceUDP {
		return fmt.Errorf("rnicd: rdma_cm port space %d: %w", m.PortSpace, verbs.ErrInvalid)
	}
	if m.Addr.IsUnspecified() {
		m.Addr = netip.Addr{}
	}
	// as cma_use_port without CAP_NET_BIND_SERVICE (root stands for it),
	// the rule the side channel's listeners follow too (privport.go)
	if err := s.mayBind(m.Port); err != nil {
		return err
	}
	hookRelease(s)
	b, err := s.tenant.cmPorts.bind(s, m.PortSpace, m.Addr.Unmap(), m.Port, s.srv.limits.MaxCMIDs)
	if err != nil {
		return err
	}
	rep.Set(&proto.CMBindReply{Binding: b.id, Port: b.key.port})
	return nil
}

func handleCMUnbind(s *Session, req *Request, rep *Reply) error {
	var m proto.Handle
	if err := req.Decode(&m); err != nil {
		return err
	}
	if err := s.tenant.cmPorts.release(s, m.H); err != nil {
		return err
	}
	rep.Set(&proto.Empty{})
	return nil
}

// kernelTCPFree reports whether no kernel TCP socket holds port on any
// address: an iWARP NIC on kernel TCP listens there once the client calls
// rdma_listen, and the kernel hands out the same ephemeral range to
// connections (a side channel's, the daemon's own), so a port taken there
// would fail the listen with EADDRINUSE after the bind had promised it
// (TestCMCorners/iwarp/backlog did, once). Checked by binding [::]:port,
// dual-stack and without SO_REUSEADDR, so connections in TIME_WAIT count
// too; a RoCEv2 NIC's rdma_cm ports are no TCP ports, but avoiding busy
// ones costs nothing.
func kernelTCPFree(port uint16) bool {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return true // no IPv6: say nothing rather than refuse every port
	}
	defer unix.Close(fd)
	unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
	return unix.Bind(fd, &unix.SockaddrInet6{Port: int(port)}) == nil
}
