package embedded

import (
	"fmt"
	"io"
	"net/netip"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/udp"
)

// UDPConfig describes a NIC in the embedded mode: it owns Addr (an address
// of this host, e.g. 127.0.0.2 or ::1) and a UDP port through ordinary
// kernel sockets; no root and no TAP are needed.
//
// Its GID table is Addr alone, at index 0: frames leave through kernel
// sockets, so there is no Ethernet port whose link-local GID Linux would
// put first (the TAP mode has one: there index 0 is link-local and the
// addresses start at 1, as on rxe).
type UDPConfig struct {
	Name string
	Addr netip.Addr
	// Port is the RoCEv2 UDP port the NIC listens on (4791 if zero).
	Port uint16
	// PeerPorts gives the port of peers that do not listen on Port (two
	// NICs on ::1 must use different ports).
	PeerPorts map[netip.Addr]uint16
	// MTU is the link MTU (1500 if zero: path MTU 1024; loopback allows
	// 9000 and path MTU 4096).
	MTU   int
	Pcap  *pcap.Writer
	Trace io.Writer
	// Link, if set, replaces the kernel socket (tests run whole NICs on
	// transport.NewPipe): the NIC keeps the embedded mode's synthetic MACs
	// and ports. Open closes it if the NIC cannot be built.
	Link transport.Endpoint
	// Budget bounds the bytes all RC QPs keep unacknowledged together (see
	// Config.Budget): 0 sizes it from the socket's receive buffer, negative
	// turns it off.
	Budget int
	// NoPoll: the receive loop parks as soon as its socket is empty (see
	// udp.Config.NoPoll); rnicd's NICs.
	NoPoll bool
	// Loopback hands frames for another NIC of this process that loops
	// too to it in memory, not through the kernel (udp.Config.Loopback);
	// rnicd's NICs.
	Loopback bool
	// Faults, if set, puts seeded faults between the engine and its
	// socket (faults.go); its seed must be resolved. Pcap then records
	// the wire as the faults leave it, with a note on each frame they
	// touched.
	Faults *transport.FaultSpec
	// FollowLink makes the port follow the kernel interface that carries
	// Addr (udp.WatchAddrLink): DOWN while it is down, with
	// IBV_EVENT_PORT_ERR and IBV_EVENT_PORT_ACTIVE as it goes down and
	// up, as rxe's port follows its net device; the device then claims
	// IBV_DEVICE_PORT_ACTIVE_EVENT.
	FollowLink bool
}

// Open opens a NIC in the embedded mode.
func Open(cfg UDPConfig) (*NIC, error) {
	port := cfg.Port
	if port == 0 {
		port = wire.UDPPort
	}
	if cfg.Link != nil {
		n, err := NewNIC(Config{Name: cfg.Name, Addr: cfg.Addr, MAC: udp.SyntheticMAC(cfg.Addr), MTU: cfg.MTU,
			Link: cfg.Link, Pcap: cfg.Pcap, Trace: cfg.Trace, UDPPort: port, Budget: cfg.Budget,
			Resolve:  func(a netip.Addr) ([6]byte, bool) { return udp.SyntheticMAC(a), true },
			PeerPort: func(a netip.Addr) uint16 { return cfg.PeerPorts[a.Unmap()] }})
		if err != nil {
			cfg.Link.Close() // it would have been the NIC's to close
			return nil, err
		}
		return n, nil
	}
	ep, err := udp.Open(udp.Config{Addr: cfg.Addr, Port: port, NoPoll: cfg.NoPoll, Loopback: cfg.Loopback,
		// A frame that has to leave from the main socket (its per-QP
		// source port could not be bound) changes its UDP source port,
		// which the ICRC covers: seal it again.
		Reseal: func(b []byte) {
			var f wire.Frame
			if f.Decode(b, 0) == nil {
				f.Seal()
			}
		}})
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	peers := cfg.PeerPorts
	var link transport.Endpoint = ep
	var faults *transport.FaultEndpoint
	pw := cfg.Pcap
	if cfg.Faults != nil {
		faults = withFaults(ep, *cfg.Faults, cfg.Pcap)
		link, pw = faults, nil
	}
	n, err := NewNIC(Config{Name: cfg.Name, Addr: ep.Addr(), MAC: ep.MAC(), MTU: cfg.MTU, Link: link,
		Pcap: pw, Trace: cfg.Trace, Budget: cfg.Budget,
		// The kernel hides the peer's MAC; the link puts a synthetic one,
		// derived from the address, on every frame it delivers, and the
		// engine addresses peers the same way so captures agree.
		Resolve:  func(a netip.Addr) ([6]byte, bool) { return udp.SyntheticMAC(a), true },
		PeerPort: func(a netip.Addr) uint16 { return peers[a.Unmap()] },
		UDPPort:  port, Groups: ep, PortEvents: cfg.FollowLink})
	if err != nil {
		ep.Close()
		return nil, err
	}
	n.udp, n.faults = ep, faults
	if cfg.FollowLink {
		if n.stopWatch, err = udp.WatchAddrLink(ep.Addr(), n.Device.SetPortActive); err != nil {
			n.Close()
			return nil, fmt.Errorf("embedded: %w", err)
		}
	}
	return n, nil
}
