// Package tapnictest stands in for tapnic.Open in the tools' tests: each
// "TAP" is an embedded NIC with every address of its Config on one end of
// an in-process link, and the NICs' TCP is an in-memory network among
// them, which the kernel cannot reach. A run that completes over it proves
// that a tool's TAP mode sends its side channel through the NIC's own
// stack and picks addresses and GIDs by family; the real TAPs are
// tapnic's own tests' business (they need root).
package tapnictest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/kerneltcp"
	"github.com/rnic/rnic/transport/udp"
)

// TAPs is a set of fake TAPs linked to each other.
type TAPs struct {
	mu        sync.Mutex
	links     map[string]transport.Endpoint // TAP name → its end of the link
	listeners map[netip.AddrPort]*memListener
	opened    map[string]tapnic.Config // what Open was given
	closed    map[string]int
	slots     map[string]chan net.Addr
}

// New links the TAPs named a and b.
func New(a, b string) *TAPs {
	ea, eb := transport.NewPipe()
	return &TAPs{links: map[string]transport.Endpoint{a: ea, b: eb},
		listeners: map[netip.AddrPort]*memListener{}, opened: map[string]tapnic.Config{}, closed: map[string]int{}}
}

// Opened returns the Config the TAP was opened with.
func (f *TAPs) Opened(tap string) tapnic.Config {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opened[tap]
}

// Listeners counts the addresses listened on.
func (f *TAPs) Listeners() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.listeners)
}

// Open opens the NIC of a fake TAP (each TAP once).
func (f *TAPs) Open(cfg tapnic.Config) (*Host, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	link, ok := f.links[cfg.TAP]
	if !ok {
		return nil, fmt.Errorf("fake: no TAP %q", cfg.TAP)
	}
	delete(f.links, cfg.TAP)
	f.opened[cfg.TAP] = cfg
	addrs := make([]netip.Addr, len(cfg.Prefixes))
	for i, p := range cfg.Prefixes {
		addrs[i] = p.Addr()
	}
	n, err := embedded.NewNIC(embedded.Config{Name: cfg.Name, Addr: addrs[0], Addrs: addrs, MAC: udp.SyntheticMAC(addrs[0]),
		LinkLocal: true, MTU: cfg.MTU, Link: link, Pcap: cfg.Pcap, Trace: cfg.Trace, UDPPort: wire.UDPPort,
		Resolve: func(a netip.Addr) ([6]byte, bool) { return udp.SyntheticMAC(a), true }})
	if err != nil {
		return nil, err
	}
	return &Host{f: f, n: n, name: cfg.TAP, addrs: addrs}, nil
}

// Closes counts the Close calls of the TAP's NIC.
func (f *TAPs) Closes(tap string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed[tap]
}

// Host is a fake TAP's NIC with its TCP.
type Host struct {
	f     *TAPs
	n     *embedded.NIC
	name  string
	addrs []netip.Addr
}

// NIC is the fake TAP's NIC.
func (h *Host) NIC() *embedded.NIC { return h.n }

// Close closes the NIC and counts it.
func (h *Host) Close() error {
	h.f.mu.Lock()
	h.f.closed[h.name]++
	h.f.mu.Unlock()
	return h.n.Close()
}

// Listen on the zero address listens on every address of the NIC. Under
// the fake addresses the bytes go over a kernel loopback socket, for its
// half-close.
func (h *Host) Listen(addr netip.AddrPort) (net.Listener, error) {
	at := []netip.Addr{addr.Addr()}
	if !addr.Addr().IsValid() {
		at = h.addrs
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &memListener{f: h.f, inner: inner}
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	for _, a := range at {
		ap := netip.AddrPortFrom(a, addr.Port())
		if h.f.listeners[ap] != nil {
			inner.Close()
			return nil, fmt.Errorf("fake: %v in use", ap)
		}
		h.f.listeners[ap] = l
		l.at = append(l.at, ap)
	}
	return l, nil
}

// ErrRefused is what the NIC's TCP says: not ECONNREFUSED.
var ErrRefused = errors.New("fake: connection was refused")

// Dial connects from the NIC's address of remote's family.
func (h *Host) Dial(ctx context.Context, _ netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	var local netip.Addr
	for _, a := range h.addrs {
		if a.Is4() == remote.Addr().Is4() {
			local = a
			break
		}
	}
	if !local.IsValid() {
		return nil, errors.New("fake: no route")
	}
	h.f.mu.Lock()
	l := h.f.listeners[remote]
	h.f.mu.Unlock()
	if l == nil {
		return nil, ErrRefused
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", l.inner.Addr().String())
	if err != nil {
		return nil, ErrRefused
	}
	la := net.TCPAddrFromAddrPort(netip.AddrPortFrom(local, 40000))
	h.f.slot(c.LocalAddr().String()) <- la
	return addrConn{TCPConn: c.(*net.TCPConn), local: la, remote: net.TCPAddrFromAddrPort(remote)}, nil
}

// slot passes the fake address of a dialled connection to its acceptor.
func (f *TAPs) slot(key string) chan net.Addr {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.slots == nil {
		f.slots = map[string]chan net.Addr{}
	}
	ch, ok := f.slots[key]
	if !ok {
		ch = make(chan net.Addr, 1)
		f.slots[key] = ch
	}
	return ch
}

// Retryable: any failure but a cancelled context, as the tools' TAP
// hosts decide.
func (h *Host) Retryable(err error) bool {
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// Streams: kernel TCP; iWARP tests over the fake give the NICs loopback
// addresses.
func (h *Host) Streams() stream.Network { return &kerneltcp.Network{} }

type memListener struct {
	f     *TAPs
	at    []netip.AddrPort
	inner net.Listener
	once  sync.Once
}

func (l *memListener) Accept() (net.Conn, error) {
	c, err := l.inner.Accept()
	if err != nil {
		return nil, err
	}
	remote := <-l.f.slot(c.RemoteAddr().String())
	local := net.TCPAddrFromAddrPort(l.at[0])
	for _, a := range l.at {
		if a.Addr().Is4() == remote.(*net.TCPAddr).AddrPort().Addr().Unmap().Is4() {
			local = net.TCPAddrFromAddrPort(a)
		}
	}
	return addrConn{TCPConn: c.(*net.TCPConn), local: local, remote: remote}, nil
}

func (l *memListener) Close() error {
	l.once.Do(func() {
		l.inner.Close()
		l.f.mu.Lock()
		for _, a := range l.at {
			delete(l.f.listeners, a)
		}
		l.f.mu.Unlock()
	})
	return nil
}

func (l *memListener) Addr() net.Addr { return net.TCPAddrFromAddrPort(l.at[0]) }

// addrConn gives a connection the NIC's addresses, as the NIC's TCP conns
// have them.
type addrConn struct {
	*net.TCPConn
	local, remote net.Addr
}

func (c addrConn) LocalAddr() net.Addr  { return c.local }
func (c addrConn) RemoteAddr() net.Addr { return c.remote }
