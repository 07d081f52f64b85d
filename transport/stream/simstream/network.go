// Simulated network: TCP connection set-up on the virtual clock, so the
// iWARP connection manager's connect, accept, refusal and timeout paths
// (and the MPA timers that follow) run deterministically in the simulated
// mode.
//
// A Dial at virtual time t plays the three-way handshake with the
// connection's one-way latency L:
//
//	t        SYN leaves the dialer
//	t+L      SYN reaches the listener's address; NetConfig.Connect (if
//	         set) decides its fate
//	t+2L+D   SYN-ACK reaches the dialer: done(conn, nil)      (D = AcceptDelay)
//	t+3L+D   ACK reaches the listener: the acceptor gets the passive end
//
// Nobody listening (or ConnectRefuse) answers with a RST: done(nil,
// stream.ErrRefused) at t+2L. ConnectDrop loses the SYN: done(nil,
// stream.ErrTimeout) at t+DialTimeout. Bytes the dialer writes from done on
// wait at the passive end until its receiver is installed.

package simstream

import (
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream"
)

// ConnectVerdict is the fate of a connection attempt in a Network.
type ConnectVerdict uint8

const (
	// ConnectAuto accepts when something listens at the address and
	// refuses otherwise, as a host does.
	ConnectAuto ConnectVerdict = iota
	// ConnectRefuse answers the SYN with a RST: stream.ErrRefused.
	ConnectRefuse
	// ConnectDrop loses the SYN: the dialer times out (stream.ErrTimeout).
	ConnectDrop
)

// NetConfig configures a Network.
type NetConfig struct {
	// Conn configures every connection (its A and B are ignored). Each
	// connection draws its random choices from its own seed, derived from
	// Conn.Seed and the connection's number (0 for the first Dial), so
	// adding a connection does not change the others' chunks. In
	// Conn.Tamper and Conn.Reset, AtoB is the dialer's direction.
	Conn Config
	// AcceptDelay is how long the listening side takes to answer a SYN,
	// on top of the latency.
	AcceptDelay time.Duration
	// DialTimeout bounds a Dial; zero means stream.DefaultDialTimeout.
	DialTimeout time.Duration
	// Connect, if set, decides the fate of each SYN when it reaches the
	// listener's address (local is the dialer's address). It runs inside
	// the clock's event loop and must not call the network.
	Connect func(local, remote netip.AddrPort) ConnectVerdict
}

// Network is a simulated network of TCP endpoints on a virtual clock. It
// implements stream.Network.
type Network struct {
	clk       *clock.Virtual
	cfg       NetConfig
	mu        sync.Mutex
	listeners map[netip.AddrPort]*Listener
	nextPort  uint16
	conns     uint64
}

var _ stream.Network = (*Network)(nil)

// First ephemeral port handed out (IANA's dynamic range).
const firstEphemeral = 49152

// NewNetwork returns an empty network driven by clk. It panics if
// cfg.Conn is invalid.
func NewNetwork(clk *clock.Virtual, cfg NetConfig) *Network {
	if err := cfg.Conn.Validate(); err != nil {
		panic(err)
	}
	cfg.Conn = cfg.Conn.withDefaults()
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = stream.DefaultDialTimeout
	}
	return &Network{clk: clk, cfg: cfg, listeners: map[netip.AddrPort]*Listener{}, nextPort: firstEphemeral}
}

// ephemeralLocked returns a port not listened on at addr.
func (n *Network) ephemeralLocked(addr netip.Addr) uint16 {
	for {
		p := n.nextPort
		n.nextPort++
		if n.nextPort == 0 {
			n.nextPort = firstEphemeral
		}
		if _, busy := n.listeners[netip.AddrPortFrom(addr, p)]; !busy {
			return p
		}
	}
}

// Listen implements stream.Network.
func (n *Network) Listen(addr netip.AddrPort) (stream.Listener, error) {
	l, err := n.ListenSim(addr)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// ListenSim is Listen returning the concrete type.
func (n *Network) ListenSim(addr netip.AddrPort) (*Listener, error) {
	addr = stream.UnmapPort(addr)
	n.mu.Lock()
	defer n.mu.Unlock()
	if addr.Port() == 0 {
		addr = netip.AddrPortFrom(addr.Addr(), n.ephemeralLocked(addr.Addr()))
	}
	if _, busy := n.listeners[addr]; busy {
		return nil, stream.ErrAddrInUse
	}
	l := &Listener{n: n, addr: addr}
	n.listeners[addr] = l
	return l, nil
}

// lookupLocked finds the listener for remote: the exact address, or the
// unspecified address of its family with the same port.
func (n *Network) lookupLocked(remote netip.AddrPort) *Listener {
	if l := n.listeners[remote]; l != nil {
		return l
	}
	unspec := netip.IPv4Unspecified()
	if remote.Addr().Is6() {
		unspec = netip.IPv6Unspecified()
	}
	return n.listeners[netip.AddrPortFrom(unspec, remote.Port())]
}

// simDial is one Dial in progress.
type simDial struct {
	n        *Network
	local    netip.AddrPort
	remote   netip.AddrPort
	seq      uint64
	done     func(stream.Conn, error)
	finished bool
	timeout  clock.Timer
	step     clock.Timer
}

// Dial implements stream.Dialer; see the file comment for the timeline. A zero
// local address means the remote's own address (a connection within one
// host); the port is always an ephemeral one.
func (n *Network) Dial(local netip.Addr, remote netip.AddrPort, done func(stream.Conn, error)) (cancel func()) {
	remote = stream.UnmapPort(remote)
	if !local.IsValid() {
		local = remote.Addr()
	}
	local = local.Unmap()
	n.mu.Lock()
	defer n.mu.Unlock()
	d := &simDial{n: n, remote: remote, done: done, seq: n.conns,
		local: netip.AddrPortFrom(local, n.ephemeralLocked(local))}
	n.conns++
	d.timeout = n.clk.AfterFunc(n.cfg.DialTimeout, func() { d.finish(nil, stream.ErrTimeout) })
	d.step = n.clk.AfterFunc(n.cfg.Conn.Latency, d.synArrives)
	return d.cancel
}

// cancel implements the cancel function Dial returns.
func (d *simDial) cancel() {
	n := d.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if d.finished {
		return
	}
	d.finished = true
	d.timeout.Stop()
	d.step.Stop()
	n.clk.AfterFunc(0, func() { d.done(nil, stream.ErrCanceled) })
}

// finish ends the attempt with c or err, unless it already ended (then c,
// which nobody will get, is reset).
func (d *simDial) finish(c *Conn, err error) {
	n := d.n
	n.mu.Lock()
	if d.finished {
		n.mu.Unlock()
		if c != nil {
			c.Abort()
		}
		return
	}
	d.finished = true
	d.timeout.Stop()
	d.step.Stop()
	n.mu.Unlock()
	if err != nil {
		d.done(nil, err)
		return
	}
	d.done(c, nil)
}

func (d *simDial) live() bool {
	d.n.mu.Lock()
	defer d.n.mu.Unlock()
	return !d.finished
}

func (d *simDial) synArrives() {
	n := d.n
	if !d.live() {
		return
	}
	v := ConnectAuto
	if n.cfg.Connect != nil {
		v = n.cfg.Connect(d.local, d.remote)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if d.finished {
		return
	}
	l := n.lookupLocked(d.remote)
	switch {
	case v == ConnectDrop:
		// No answer: the timeout ends the attempt.
	case v == ConnectRefuse, l == nil:
		d.step = n.clk.AfterFunc(n.cfg.Conn.Latency, func() { d.finish(nil, stream.ErrRefused) })
	default:
		d.step = n.clk.AfterFunc(n.cfg.AcceptDelay+n.cfg.Conn.Latency, func() { d.synAckArrives(l) })
	}
}

func (d *simDial) synAckArrives(l *Listener) {
	n := d.n
	if !d.live() {
		return
	}
	cfg := n.cfg.Conn
	cfg.Seed = rand.New(rand.NewPCG(cfg.Seed, 0x636f6e6e00000000|d.seq)).Uint64() // "conn" | number
	a, b := newPair(n.clk, cfg, d.local, d.remote)
	// The ACK is the first thing on the dialer's wire: it reaches the
	// listener before any byte written from done.
	n.clk.AfterFunc(cfg.Latency, func() { l.enqueue(b) })
	d.finish(a, nil)
}

// Listener listens on a Network. It implements stream.Listener; the
// acceptor runs inside the clock's event loop.
type Listener struct {
	n         *Network
	addr      netip.AddrPort
	acceptor  func(stream.Conn)
	backlog   []*Conn
	closed    bool
	accepting bool
}

var _ stream.Listener = (*Listener)(nil)

// Addr implements stream.Listener.
func (l *Listener) Addr() netip.AddrPort { return l.addr }

// SetAcceptor implements stream.Listener.
func (l *Listener) SetAcceptor(onConn func(stream.Conn)) {
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	l.acceptor = onConn
	l.armLocked()
}

// Close implements stream.Listener: connections whose handshake is not complete
// yet, or that wait for the acceptor, are reset.
func (l *Listener) Close() error {
	n := l.n
	n.mu.Lock()
	if l.closed {
		n.mu.Unlock()
		return nil
	}
	l.closed = true
	if n.listeners[l.addr] == l {
		delete(n.listeners, l.addr)
	}
	waiting := l.backlog
	l.backlog = nil
	n.mu.Unlock()
	for _, c := range waiting {
		c.Abort()
	}
	return nil
}

func (l *Listener) enqueue(c *Conn) {
	n := l.n
	n.mu.Lock()
	if l.closed {
		n.mu.Unlock()
		c.Abort()
		return
	}
	l.backlog = append(l.backlog, c)
	l.armLocked()
	n.mu.Unlock()
}

func (l *Listener) armLocked() {
	if l.accepting || l.acceptor == nil || len(l.backlog) == 0 {
		return
	}
	l.accepting = true
	l.n.clk.AfterFunc(0, l.accept)
}

func (l *Listener) accept() {
	n := l.n
	n.mu.Lock()
	defer n.mu.Unlock()
	l.accepting = false
	for len(l.backlog) > 0 && l.acceptor != nil && !l.closed {
		c, f := l.backlog[0], l.acceptor
		l.backlog = l.backlog[1:]
		n.mu.Unlock()
		f(c)
		n.mu.Lock()
	}
}
