// Configuration: ibv_rc_pingpong's options with its defaults, plus what an
// rnic NIC needs (its own address, the RoCEv2 port, capture and trace), and
// the convention that picks addresses on one host.

package pingpong

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/rnic/rnic/cmd/internal/loopback"
	"github.com/rnic/rnic/cmd/internal/progkit"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/verbs"
)

// Defaults, as ibv_rc_pingpong's.
const (
	DefaultPort    = 18515
	DefaultIBPort  = 1
	DefaultSize    = 4096
	DefaultMTU     = 1024
	DefaultRxDepth = 500
	DefaultIters   = 1000
	// DefaultRDMAPort is the IANA RoCEv2 UDP port.
	DefaultRDMAPort = 4791
	// DefaultUDSize is ibv_ud_pingpong's default message size.
	DefaultUDSize = 1024
	// UDQKey is the Q_Key both sides of ibv_ud_pingpong use.
	UDQKey = 0x11111111
	// GRHSpace is the room at the head of every UD receive buffer where
	// the NIC writes the 40-byte GRH (for RoCEv2 over IPv4: 20 zero bytes
	// and the IPv4 header); the payload follows it.
	GRHSpace = 40
)

// Config describes one side of a ping-pong run.
type Config struct {
	// Server is the host to connect to; empty means serve.
	Server string
	// Port is the TCP port of the side channel (-p).
	Port int
	// IBDev is the device (-d), a device string (ibv.ParseSpec). A plain
	// name (rnic0 if empty) is this process's own NIC, built from the
	// fields below, and is its name. NAME@SOCKET (a NIC rnicd serves) and
	// verbs:NAME (libibverbs) are opened with ibv.Open: their backend owns
	// the port, so TAP, Link, Pcap and Trace must be unset and RDMAPort is
	// not used; the NIC's address is one of the device's GIDs (Addr, if
	// set, must be one; zero takes the first of the server's family, and a
	// server then listens on every address), and the side channel goes
	// through the device's ibv.Network if it has one, else kernel TCP.
	IBDev string
	// IBPort is the port number (-i); the NIC has port 1 only.
	IBPort int
	// Size is the message size in bytes (-s).
	Size int
	// MTU is the path MTU in bytes (-m): 256, 512, 1024, 2048 or 4096.
	MTU int
	// RxDepth is the number of receives kept posted (-r).
	RxDepth int
	// Iters is the number of exchanges (-n).
	Iters int
	// SL is the service level (-l); RoCEv2 has no SL on the wire, it is
	// accepted and kept in the address vector.
	SL int
	// Events sleeps on CQ events instead of polling (-e).
	Events bool
	// GIDIndex is the local GID index (-g); negative sends no GID, as
	// rc_pingpong does without -g (see Run for what rnic does then).
	GIDIndex int
	// Check validates received buffers (-c).
	Check bool
	// UD runs ibv_ud_pingpong instead of ibv_rc_pingpong: a UD QP with
	// Q_Key UDQKey, sends addressed through an address handle, GRHSpace
	// bytes ahead of every receive. Size must fit the port's active MTU
	// (UD messages are one packet); MTU is not used.
	UD bool

	// Addr is the NIC's own IP address. Zero picks by the loopback
	// convention (loopback.Server for a server; for a client of a loopback
	// server the other loopback address, otherwise the local address the
	// host routes to the server from).
	Addr netip.Addr
	// RDMAPort is the RoCEv2 UDP port (DefaultRDMAPort if 0).
	RDMAPort uint16
	// Pcap, if set, records every frame the NIC sends and receives.
	Pcap *embedded.PcapWriter
	// Trace, if set, receives the engine's trace.
	Trace io.Writer
	// Out receives rc_pingpong's lines (io.Discard if nil).
	Out io.Writer
	// Err, if set, is told what a client waits for when its server takes
	// more than a second to answer.
	Err io.Writer

	// Link, if set, carries the NIC's frames instead of a UDP socket on
	// Addr (tests, simulations); Run closes it with the NIC.
	Link embedded.Link
	// Listener, if set, is the server's side channel instead of a TCP
	// listener on Addr:Port (tests use one on an ephemeral port).
	Listener net.Listener
	// DialRetry is how long a client keeps retrying a refused side-channel
	// connection, so that a client started together with its server finds
	// it (DefaultDialRetry if 0; negative tries once, as rc_pingpong does).
	DialRetry time.Duration

	// TAP, if set, runs this side in the TAP mode (nil: the embedded
	// mode): its NIC owns the TAP device TAP.TAP with TAP.Prefixes as its
	// addresses (GID index i+1 is Prefixes[i]; 0 is the link-local GID),
	// and the side channel goes
	// through the NIC's own IP and TCP stack, so the kernel needs no
	// address on the TAP's network. Addr, if set, must be one of the
	// prefixes' addresses; zero takes the first (a server then listens on
	// every address of its NIC), or for a client the first of the server's
	// family. Without -g each QP sends from the GID of the address its
	// side channel runs on. Pcap and Trace go to the TAP NIC (the pcap
	// then holds every frame on the TAP, ARP, ND and TCP included) unless
	// TAP sets its own. The path MTU must fit the TAP's Ethernet MTU
	// (1500: at most 1024). Link and Listener must be nil.
	TAP *tapnic.Config
}

// DefaultDialRetry is Config.DialRetry's default.
const DefaultDialRetry = 2 * time.Second

// ErrConfig is wrapped by configuration errors.
var ErrConfig = errors.New("pingpong: bad configuration")

// kit words the shared plumbing's errors as pingpong's.
var kit = progkit.Program{Name: "pingpong", ErrConfig: ErrConfig}

// resolved is a Config with defaults applied and values checked.
type resolved struct {
	Config
	spec   ibv.Spec // the device IBDev names
	mtu    verbs.MTU
	server netip.Addr // the server's address, for a client
	// anyAddr: a TAP-mode server without Config.Addr listens on every
	// address of its NIC, so that clients of either family find it (and
	// so does one on a device of another backend).
	anyAddr bool
}

// resolve fills defaults and checks cfg.
func (cfg Config) resolve(ctx context.Context) (*resolved, error) {
	r := &resolved{Config: cfg}
	c := &r.Config
	c.fillDefaults()
	if err := c.checkRanges(); err != nil {
		return nil, err
	}
	if r.mtu = verbs.MTUFromBytes(c.MTU); r.mtu == 0 {
		return nil, fmt.Errorf("%w: MTU %d, must be 256, 512, 1024, 2048 or 4096", ErrConfig, c.MTU)
	}
	var err error
	if r.spec, err = ibv.ParseSpec(cmp.Or(c.IBDev, "rnic0")); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if r.spec.Backend != ibv.BackendLocal {
		// The rest waits for the device's GID table and port
		// (resolveDevice).
		return r, r.checkDevice()
	}
	if c.UD {
		if err := c.fitUDSize(); err != nil {
			return nil, err
		}
	}
	if c.TAP != nil {
		if err := r.resolveTAP(ctx); err != nil {
			return nil, err
		}
		return r, nil
	}
	if c.Server != "" {
		a, err := kit.Lookup(ctx, c.Server, nil)
		if err != nil {
			return nil, err
		}
		r.server = a
	}
	if !c.Addr.IsValid() {
		a, err := defaultAddr(r.server)
		if err != nil {
			return nil, err
		}
		c.Addr = a
	}
	c.Addr = c.Addr.Unmap()
	return r, nil
}

// fillDefaults gives the fields left zero their defaults.
func (c *Config) fillDefaults() {
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.IBPort == 0 {
		c.IBPort = DefaultIBPort
	}
	if c.Size == 0 {
		c.Size = DefaultSize
		if c.UD {
			c.Size = DefaultUDSize
		}
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.RxDepth == 0 {
		c.RxDepth = DefaultRxDepth
	}
	if c.Iters == 0 {
		c.Iters = DefaultIters
	}
	if c.RDMAPort == 0 {
		c.RDMAPort = DefaultRDMAPort
	}
	if c.DialRetry == 0 {
		c.DialRetry = DefaultDialRetry
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
}

// checkRanges checks the numbers against the NIC's limits and
// ibv_rc_pingpong's.
func (c *Config) checkRanges() error {
	switch {
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("%w: port %d", ErrConfig, c.Port)
	case c.IBPort != 1:
		return fmt.Errorf("%w: IB port %d: the NIC has port 1 only", ErrConfig, c.IBPort)
	case c.Size < 1 || c.Size > verbs.MaxMsgSize:
		return fmt.Errorf("%w: size %d, must be 1..%d (max_msg_sz)", ErrConfig, c.Size, verbs.MaxMsgSize)
	case c.RxDepth < 1 || c.RxDepth >= nic.DefaultLimits().MaxCQE:
		// The CQ holds rx_depth + 1 entries, as ibv_rc_pingpong's.
		return fmt.Errorf("%w: rx depth %d, must be 1..%d (max_cqe − 1)", ErrConfig, c.RxDepth, nic.DefaultLimits().MaxCQE-1)
	case c.Iters < 1:
		return fmt.Errorf("%w: iters %d", ErrConfig, c.Iters)
	case c.SL < 0 || c.SL > 15:
		return fmt.Errorf("%w: SL %d, must be 0..15", ErrConfig, c.SL)
	}
	return nil
}

// fitUDSize checks a UD message against the port's MTU, as ud_pingpong
// does ("Requested size larger than port MTU").
func (c *Config) fitUDSize() error {
	port := tapnic.PathMTU(linkMTU)
	if c.TAP != nil {
		port = tapnic.PathMTU(c.TAP.MTU)
	}
	if c.Size > port {
		return fmt.Errorf("%w: requested size %d larger than port MTU (%d)", ErrConfig, c.Size, port)
	}
	// UD has no path MTU attribute; keep the check below from refusing a
	// -m the run does not use.
	c.MTU = min(c.MTU, port)
	return nil
}

// resolveTAP checks the TAP mode's settings and picks the NIC's address.
func (r *resolved) resolveTAP(ctx context.Context) error {
	c := &r.Config
	t := c.TAP
	if c.Link != nil || c.Listener != nil {
		return fmt.Errorf("%w: the TAP mode has its own link and side channel (no Link, no Listener)", ErrConfig)
	}
	own, err := kit.TAPAddrs(t)
	if err != nil {
		return err
	}
	if fit := tapnic.PathMTU(t.MTU); c.MTU > fit {
		return fmt.Errorf("%w: path MTU %d does not fit TAP %s's Ethernet MTU %d (at most %d)", ErrConfig, c.MTU, t.TAP, max(t.MTU, 1500), fit)
	}
	return r.resolveOwn(ctx, own, "TAP "+t.TAP)
}

// checkDevice refuses what only a NIC of this process has.
func (r *resolved) checkDevice() error {
	c := &r.Config
	var what string
	switch {
	case c.TAP != nil:
		what = "a TAP"
	case c.Link != nil:
		what = "a link"
	case c.Pcap != nil:
		what = "a capture"
	case c.Trace != nil:
		what = "a trace"
	default:
		return nil
	}
	return kit.NotLocal(r.spec, what)
}

// resolveDevice picks the addresses from an opened device's GID table and
// checks a UD message against its port's active MTU.
func (r *resolved) resolveDevice(ctx context.Context, dev ibv.Device) error {
	c := &r.Config
	if c.UD {
		pa, err := dev.QueryPort(uint8(c.IBPort))
		if err != nil {
			return fmt.Errorf("pingpong: query port %d of %s: %w", c.IBPort, r.spec, err)
		}
		port := pa.ActiveMTU.Bytes()
		if c.Size > port {
			return fmt.Errorf("%w: requested size %d larger than port MTU (%d)", ErrConfig, c.Size, port)
		}
		c.MTU = min(c.MTU, port)
	}
	own := progkit.DeviceAddrs(dev)
	if len(own) == 0 {
		return fmt.Errorf("%w: device %s has no IP address in its GID table %v", ErrConfig, r.spec, dev.GIDs())
	}
	return r.resolveOwn(ctx, own, "device "+r.spec.String())
}

// resolveOwn picks the NIC's address among own, the addresses of a NIC
// that is not the host's (a TAP NIC's, a device's), and resolves the
// server to one of a family the NIC has: Addr, if set, must be one of
// own; zero takes the first (a server then listens on every address of
// its NIC), or for a client the first of the server's family.
func (r *resolved) resolveOwn(ctx context.Context, own []netip.Addr, what string) error {
	c := &r.Config
	if c.Server != "" {
		a, err := kit.Lookup(ctx, c.Server, own)
		if err != nil {
			return err
		}
		r.server = a
	}
	r.anyAddr = c.Server == "" && !c.Addr.IsValid()
	a, err := kit.ChooseAddr(own, c.Addr, r.server, what)
	if err != nil {
		return err
	}
	c.Addr = a
	return nil
}

// defaultAddr applies the address convention (Config.Addr). server is
// invalid for a server.
func defaultAddr(server netip.Addr) (netip.Addr, error) {
	if !server.IsValid() {
		return loopback.Server, nil
	}
	return kit.ClientAddr(server, DefaultRDMAPort)
}
