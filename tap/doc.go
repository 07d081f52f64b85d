// Package tap puts a NIC on a real Ethernet: a TAP device it owns like
// hardware owns its port (nic/README.md, "Modes").
//
// The pipeline, from the wire up:
//
//	TAP fd (device.go: TUNSETIFF + netlink)       FrameIO
//	  │ whole Ethernet frames, both ways; with offload behind a
//	  │ virtio_net_hdr, TCP super-segments whole (vnet.go, host_offload.go)
//	Host (host.go): MAC filter, pcap of every frame in and out, demux
//	  ├─ ARP (arp.go), IPv6 ND (ndp.go) ── neighbour cache (neighbor.go)
//	  ├─ ICMP / ICMPv6 echo (icmp.go): `ping` works
//	  ├─ UDP 4791 ──────────────── RoCE endpoint (roce.go) ── roce.Stack
//	  ├─ IGMP / MLD queries, UDP 4791 to joined groups (mcast.go): the
//	  │    engine's multicast groups, reported as IGMPv3 / MLDv2
//	  └─ TCP ───────────────────── TCPStack (netstack.go): gVisor netstack
//	                                 ├─ iWARP streams (transport/stream/netstack)
//	                                 └─ the tools' side channels (gonet)
//
// One device, one MAC, one set of IP addresses for both protocols: the
// RoCE engine and the TCP stack send through the Host, which fills in the
// destination MAC from the neighbour cache (resolving it first when
// needed), so neither of them knows about ARP or ND.
package tap

// FrameIO is the raw Ethernet side of a NIC: a TAP device (Device) or, in
// tests, one end of a pipe (NewFramePipe).
type FrameIO interface {
	// ReadFrame blocks until a frame arrives, copies it into b and returns
	// its length (a frame longer than b is truncated to len(b)). After
	// Close it returns an error that wraps os.ErrClosed.
	ReadFrame(b []byte) (int, error)
	// WriteFrame sends one whole Ethernet frame (no FCS). It is safe for
	// concurrent use and does not keep b.
	WriteFrame(b []byte) error
	// Close releases the device; a blocked ReadFrame returns. Closing twice
	// is harmless.
	Close() error
}
