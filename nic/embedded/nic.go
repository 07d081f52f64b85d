package embedded

import (
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/udp"
)

// Config describes a NIC.
type Config struct {
	// Name is the device name (rnic0 if empty).
	Name string
	// Addr is the NIC's IP address: its RoCEv2 GID is ::ffff:Addr for IPv4.
	Addr netip.Addr
	// Addrs, if set, are all of the NIC's addresses in GID table order
	// (Addr among them): a TAP-mode NIC may own an IPv4 and an IPv6
	// address. Empty means Addr alone.
	Addrs []netip.Addr
	// MAC is the NIC's Ethernet address.
	MAC [6]byte
	// LinkLocal puts the link-local GID of MAC at index 0 of the GID
	// table, as Linux does, for a NIC that owns MAC on the wire (the TAP
	// mode): the link must deliver frames to that address too.
	LinkLocal bool
	// PortEvents says the port follows a link that goes down and up
	// (the TAP mode, and UDPConfig.FollowLink, call
	// nic.Device.SetPortActive): the device claims
	// IBV_DEVICE_PORT_ACTIVE_EVENT.
	PortEvents bool
	// MTU is the link MTU; the active path MTU follows it (1500 → 1024).
	MTU int
	// Link carries the NIC's frames.
	Link transport.Endpoint
	// Clock drives the engine (a real clock if nil).
	Clock clock.Clock
	// Resolve maps peer addresses to MACs (neighbour table).
	Resolve func(netip.Addr) ([6]byte, bool)
	// Pcap, if set, records every frame the NIC sends and receives.
	Pcap *pcap.Writer
	// Trace, if set, receives the engine's trace, one line per event.
	Trace io.Writer
	// TraceEvents, if set, receives the engine's trace events themselves
	// (from the engine's goroutines, as they happen), e.g. for a ladder
	// diagram's timer marks.
	TraceEvents func(roce.TraceEvent)
	// DeferAcks coalesces ACKs across frames delivered one by one (see
	// roce.Config.DeferAcks); for the simulated link.
	DeferAcks bool
	// FixedWindow keeps the QPs' windows whole whatever is lost (see
	// roce.Config.FixedWindow); for the simulated link, whose losses are
	// faults, not congestion.
	FixedWindow bool
	// Budget bounds the bytes all RC QPs keep unacknowledged together
	// (roce.Config.Budget); 0 sizes it from Link's receive buffer when it
	// has one (the kernel socket of Open), negative turns it off.
	Budget int
	// UDPPort is the RoCEv2 port (4791 if zero); PeerPort gives peers'
	// ports when they differ (see roce.Config).
	UDPPort  uint16
	PeerPort func(netip.Addr) uint16
	// Groups joins the IP multicast groups QPs attach to, when Link
	// (behind faults) is not itself a transport.GroupMember.
	Groups transport.GroupMember
	// Seed, if set, makes the device's QPNs and keys a function of it
	// (nic.Config.Seed): a simulated run replays byte for byte.
	Seed *[32]byte
}

// NIC is an assembled NIC.
type NIC struct {
	*nic.Device
	Stack *roce.Stack
	Addr  netip.Addr
	MAC   [6]byte
	link  transport.Endpoint
	udp   *udp.Endpoint // the kernel UDP link of Open, nil on other links
	// faults are the seeded faults on udp (UDPConfig.Faults), if any.
	faults *transport.FaultEndpoint
	// stopWatch ends the watch of the link under the port (FollowLink).
	stopWatch func()
	once      sync.Once
}

// NewNIC builds a NIC on cfg.Link.
func NewNIC(cfg Config) (*NIC, error) {
	if cfg.Link == nil || !cfg.Addr.IsValid() {
		return nil, fmt.Errorf("embedded: a NIC needs a link and an address")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.NewReal()
	}
	if cfg.Name == "" {
		cfg.Name = "rnic0"
	}
	link := cfg.Link
	budget := cfg.Budget
	if budget == 0 {
		budget = roce.LinkBudget(link) // before a capture tee hides the socket
	}
	if cfg.Pcap != nil {
		clk := cfg.Clock
		if v, ok := clk.(*clock.Virtual); ok {
			link = pcap.Tee(link, cfg.Pcap, transport.VirtualTimestamps(v))
		} else {
			link = pcap.Tee(link, cfg.Pcap, time.Now)
		}
	}
	addrs := cfg.Addrs
	if len(addrs) == 0 {
		addrs = []netip.Addr{cfg.Addr}
	}
	if cfg.LinkLocal {
		// The engine's source addresses are in GID table order.
		addrs = nic.WithLinkLocal(addrs, cfg.MAC)
	}
	scfg := roce.Config{Link: link, Clock: cfg.Clock, MAC: cfg.MAC, Addrs: addrs,
		Resolve: cfg.Resolve, DeferAcks: cfg.DeferAcks, FixedWindow: cfg.FixedWindow, UDPPort: cfg.UDPPort, PeerPort: cfg.PeerPort,
		Budget: budget}
	// The embedded mode's link keeps a socket per source port: QPs hold
	// theirs so that destroying a QP closes it.
	scfg.SourcePorts, _ = cfg.Link.(transport.SourcePorts)
	scfg.Groups = cfg.Groups
	if scfg.Groups == nil {
		scfg.Groups, _ = cfg.Link.(transport.GroupMember)
	}
	if cfg.Trace != nil || cfg.TraceEvents != nil {
		var mu sync.Mutex
		w, te, name := cfg.Trace, cfg.TraceEvents, cfg.Name
		scfg.Trace = func(e roce.TraceEvent) {
			if te != nil {
				te(e)
			}
			if w != nil {
				mu.Lock()
				fmt.Fprintf(w, "%s %v\n", name, e)
				mu.Unlock()
			}
		}
	}
	stack, err := roce.NewStack(scfg)
	if err != nil {
		return nil, err
	}
	var limits nic.Limits
	if cfg.PortEvents {
		limits.DeviceCap = nic.DefaultLimits().DeviceCap | verbs.DevicePortActiveEvent
	}
	dev, err := nic.Open(nic.Config{Name: cfg.Name, Provider: stack, GIDs: addrs, LinkLocal: cfg.LinkLocal, MAC: cfg.MAC, MTU: cfg.MTU,
		Seed: cfg.Seed, Limits: limits})
	if err != nil {
		return nil, err
	}
	return &NIC{Device: dev, Stack: stack, Addr: cfg.Addr, MAC: cfg.MAC, link: cfg.Link}, nil
}

// Close closes the device and its link.
func (n *NIC) Close() error {
	var err error
	n.once.Do(func() {
		if n.stopWatch != nil {
			n.stopWatch()
		}
		n.Stack.Close() // owed ACKs leave before the link closes
		err = n.Device.Close()
		if e := n.link.Close(); err == nil {
			err = e
		}
	})
	return err
}
