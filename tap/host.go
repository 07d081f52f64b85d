// Host: the host stack on a TAP — what the kernel would do for an
// interface, done by the NIC itself, because the TAP's far side is the wire
// and nothing else answers ARP, ND or ping for the NIC's addresses.
//
// Receive path (the reader goroutine, one reused buffer):
//
//	ReadFrame ─► pcap ─► MAC filter ─► EtherType
//	                                     ├─ 0x0806 ARP (arp.go)
//	                                     ├─ 0x0800 IPv4 ─┐ version, length, checksum,
//	                                     └─ 0x86DD IPv6 ─┤ fragments, our address?
//	                                                     ├─ ICMP / ICMPv6 (icmp.go, ndp.go)
//	                                                     ├─ UDP RoCEPort ─► RoCE receiver (roce.go)
//	                                                     ├─ UDP other ───► port unreachable
//	                                                     └─ TCP ─────────► SetTCP function
//
// Send path (any goroutine): the RoCE endpoint's Send and SendIP build or
// copy a whole Ethernet frame, and output fills in the destination MAC from
// the neighbour cache (neighbor.go), queueing the frame while the address
// is being resolved.
//
// Ethernet II header (IEEE 802.3 §3.2.6):
//
//	+----------------+----------------+-----------+
//	| destination 6  | source 6       | type 2    |
//	+----------------+----------------+-----------+
//
// IPv4 header (RFC 791 §3.1) and IPv6 header (RFC 8200 §3) are read and
// written in place with the offsets named below.

package tap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
)

// Ethernet and IP numbers.
const (
	ethHeaderLen   = 14
	ethMinFrame    = 60 // IEEE 802.3 minimum frame without FCS
	etherTypeIPv4  = 0x0800
	etherTypeARP   = 0x0806
	etherTypeVLAN  = 0x8100
	etherTypeIPv6  = 0x86DD
	ipv4HeaderLen  = 20
	ipv6HeaderLen  = 40
	udpHeaderLen   = 8
	ipProtoICMP    = 1
	ipProtoTCP     = 6
	ipProtoUDP     = 17
	ipProtoICMPv6  = 58
	ipProtoHopOpts = 0
	defaultMTU     = 1500
	defaultRoCE    = 4791
	// readSlack is room past MTU + Ethernet + 802.1Q in the read buffer, so
	// that an oversized frame is seen as oversized rather than silently
	// truncated to a plausible length.
	readSlack = 64
)

var (
	broadcastMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	// allNodes is ff02::1 (RFC 4291 §2.7.1).
	allNodes = netip.AddrFrom16([16]byte{0: 0xff, 1: 0x02, 15: 0x01})
)

// Errors returned by the send paths (wrapped with the detail).
var (
	// ErrNoRoute: the destination is not on link. The host has no gateway
	// support: RoCE and the TCP side channels talk to neighbours only.
	ErrNoRoute = errors.New("tap: no route to host (destination not on link)")
	// ErrFrameTooBig: the frame or packet exceeds the MTU.
	ErrFrameTooBig = errors.New("tap: frame larger than the MTU")
	// ErrBadFrame: the frame or packet to send is not Ethernet/IPv4/IPv6.
	ErrBadFrame = errors.New("tap: not an IPv4 or IPv6 frame")
	// ErrHostClosed: the Host was closed.
	ErrHostClosed = errors.New("tap: host closed")
)

// HostConfig configures a Host.
type HostConfig struct {
	// IO is the wire (a Device, or a NewFramePipe end in tests). The Host
	// owns it from NewHost on and closes it in Close.
	IO FrameIO
	// MAC is the NIC's own MAC.
	MAC [6]byte
	// Prefixes are the own addresses with their on-link prefixes (IPv4
	// and/or IPv6).
	Prefixes []netip.Prefix
	// MTU is the Ethernet MTU (IP packet size limit), 1500 if 0.
	MTU int
	// RoCEPort is the RoCEv2 UDP port, 4791 if 0.
	RoCEPort uint16
	// Pcap, if set, receives every frame read from or written to IO, also
	// the ones dropped.
	Pcap *pcap.Writer
	// Clock drives the neighbour timers and the ICMP rate limit; nil is the
	// real clock.
	Clock clock.Clock
	// Neighbor tunes the neighbour cache; zero fields take the defaults.
	Neighbor NeighborConfig
	// Log, if set, gets one line per notable event (neighbour state change,
	// resolution failure, reader stop).
	Log func(format string, args ...any)
}

// Host is the host stack on one Ethernet port: see the file comment.
type Host struct {
	io       FrameIO
	mac      [6]byte
	mtu      int
	rocePort uint16
	pcap     *pcap.Writer
	stamp    func() time.Time
	clk      clock.Clock
	ncfg     NeighborConfig
	logf     func(format string, args ...any)

	// Addressing, fixed at NewHost; read without locks.
	prefixes  []netip.Prefix // masked
	addrs4    []netip.Addr
	addrs6    []netip.Addr
	groups6   []netip.Addr // IPv6 multicast groups joined: ff02::1 and solicited-node groups
	groupMACs [][6]byte    // their 33:33:xx MACs

	cnt  hostCounters
	vio  vnetIO    // the IO, if it moves frames with a virtio_net_hdr (host_offload.go)
	gso  sync.Pool // *[]byte of gsoBufLen bytes, for TCP super-segments
	roce roceEndpoint
	mc   mcastState // RoCE multicast groups (mcast.go)
	tcp  atomic.Pointer[func([]byte)]
	// tcpValid, if set, takes the TCP packets whose checksum the kernel
	// vouched for (host_offload.go).
	tcpValid atomic.Pointer[func([]byte)]
	// divert, if set, sees frames read from the wire first (divert.go).
	divert atomic.Pointer[Diverter]
	txBuf  sync.Pool // *[]byte of txBufLen bytes
	rl     icmpLimiter

	mu        sync.Mutex // guards neighbors and closed
	neighbors map[netip.Addr]*neighbor
	closed    bool

	startOnce sync.Once
	closeOnce sync.Once
	closeErr  error
	readerEnd chan struct{} // closed when the reader returns (if started)
	started   atomic.Bool

	// rxMu serialises the receive path: the reader and the loopback
	// goroutine both feed it, and a transport.Endpoint's receiver must
	// never run concurrently with itself.
	rxMu sync.Mutex
	loop loopback
}

// NewHost checks cfg and returns a Host; Start sets it running.
func NewHost(cfg HostConfig) (*Host, error) {
	if cfg.IO == nil {
		return nil, errors.New("tap: HostConfig.IO is nil")
	}
	if cfg.MAC == [6]byte{} || cfg.MAC[0]&1 != 0 {
		return nil, fmt.Errorf("tap: MAC %s is not a unicast address", macString(cfg.MAC))
	}
	if len(cfg.Prefixes) == 0 {
		return nil, errors.New("tap: HostConfig.Prefixes is empty")
	}
	mtu := cfg.MTU
	if mtu == 0 {
		mtu = defaultMTU
	}
	if mtu < 576 || mtu > 65535 {
		return nil, fmt.Errorf("tap: MTU %d out of range [576, 65535]", mtu)
	}
	h := &Host{
		io:        cfg.IO,
		mac:       cfg.MAC,
		mtu:       mtu,
		rocePort:  cfg.RoCEPort,
		pcap:      cfg.Pcap,
		clk:       cfg.Clock,
		ncfg:      cfg.Neighbor.withDefaults(),
		logf:      cfg.Log,
		neighbors: make(map[netip.Addr]*neighbor),
		readerEnd: make(chan struct{}),
	}
	if h.rocePort == 0 {
		h.rocePort = defaultRoCE
	}
	switch c := h.clk.(type) {
	case nil:
		h.clk = clock.NewReal()
		h.stamp = time.Now
	case *clock.Real:
		h.stamp = time.Now
	default:
		h.stamp = transport.VirtualTimestamps(c)
	}
	if h.logf == nil {
		h.logf = func(string, ...any) {}
	}
	h.groups6 = append(h.groups6, allNodes)
	for _, p := range cfg.Prefixes {
		a := p.Addr()
		if !p.IsValid() || a.Zone() != "" || a.IsMulticast() || a.IsUnspecified() || a.Is4In6() {
			return nil, fmt.Errorf("tap: prefix %v: not a usable unicast address", p)
		}
		h.prefixes = append(h.prefixes, p.Masked())
		if a.Is4() {
			h.addrs4 = append(h.addrs4, a)
			continue
		}
		h.addrs6 = append(h.addrs6, a)
		if g := solicitedNode(a); !containsAddr(h.groups6, g) {
			h.groups6 = append(h.groups6, g)
		}
	}
	for _, g := range h.groups6 {
		h.groupMACs = append(h.groupMACs, multicastMAC(g))
	}
	n := txBufLen(mtu)
	h.txBuf.New = func() any { b := make([]byte, n); return &b }
	if v, ok := cfg.IO.(vnetIO); ok && v.Offload() {
		h.vio = v
		h.gso.New = func() any { b := make([]byte, gsoBufLen); return &b }
	}
	h.rl.init(h.clk)
	h.roce.h = h
	h.loop.init(n)
	return h, nil
}

// txBufLen is the size of a transmit buffer: a whole frame at the MTU.
func txBufLen(mtu int) int { return mtu + ethHeaderLen }

// Start starts the reader goroutine and announces the host's addresses:
// a gratuitous ARP (RFC 5227 §2.3 announcement) per IPv4 address, an
// unsolicited NA to ff02::1 with O=1 per IPv6 address (RFC 4861 §7.2.6) and
// one MLDv2 report joining every solicited-node group (RFC 3810 §6.1), so
// that snooping bridges forward the NS for our addresses. Calling Start
// again does nothing.
func (h *Host) Start() {
	h.startOnce.Do(func() {
		h.mu.Lock()
		closed := h.closed
		if !closed {
			h.started.Store(true)
		}
		h.mu.Unlock()
		if closed {
			return
		}
		go h.readLoop()
		go h.loopLoop()
		for _, a := range h.addrs4 {
			h.sendARP(arpRequest, broadcastMAC, a, [6]byte{}, a)
		}
		if len(h.addrs6) > 0 {
			h.sendMLDReport()
		}
		for _, a := range h.addrs6 {
			h.sendNA(a, allNodes, multicastMAC(allNodes), false)
		}
	})
}

// RoCE returns the RoCE engine's link: frames to the RoCE port of our
// addresses arrive on its receiver, and its Send resolves the destination
// MAC. There is one per Host; closing it detaches the receiver only.
func (h *Host) RoCE() transport.Endpoint { return &h.roce }

// SetTCP installs the function that receives the IP packets carrying TCP
// to our addresses (Ethernet header and padding removed); the slice is
// valid only during the call, which runs on the reader goroutine. nil
// drops them (counted).
func (h *Host) SetTCP(deliver func(ipPacket []byte)) {
	if deliver == nil {
		h.tcp.Store(nil)
		return
	}
	h.tcp.Store(&deliver)
}

// SendIP sends an IPv4 or IPv6 packet from the TCP stack: it adds the
// Ethernet header, resolves the next hop's MAC (queueing the packet while
// resolving) and writes the frame. It is safe for concurrent use and does
// not keep ipPacket.
func (h *Host) SendIP(ipPacket []byte) error {
	var et uint16
	var dst netip.Addr
	switch {
	case len(ipPacket) >= ipv4HeaderLen && ipPacket[0]>>4 == 4:
		et, dst = etherTypeIPv4, netip.AddrFrom4([4]byte(ipPacket[16:20]))
	case len(ipPacket) >= ipv6HeaderLen && ipPacket[0]>>4 == 6:
		et, dst = etherTypeIPv6, netip.AddrFrom16([16]byte(ipPacket[24:40]))
	default:
		h.cnt.malformed.Add(1)
		return fmt.Errorf("tap: SendIP: %w", ErrBadFrame)
	}
	if len(ipPacket) > h.mtu {
		h.cnt.tooBig.Add(1)
		return fmt.Errorf("tap: SendIP: %d-byte packet, MTU %d: %w", len(ipPacket), h.mtu, ErrFrameTooBig)
	}
	bp := h.getTx()
	defer h.txBuf.Put(bp)
	f := (*bp)[:ethHeaderLen+len(ipPacket)]
	binary.BigEndian.PutUint16(f[12:], et)
	copy(f[ethHeaderLen:], ipPacket)
	if err := h.output(f, dst); err != nil {
		return fmt.Errorf("tap: SendIP: %w", err)
	}
	h.cnt.tcpTx.Add(1)
	return nil
}

// Lookup returns the MAC of the on-link neighbour ip if it is resolved
// (REACHABLE, STALE, DELAY or PROBE). On a miss it starts resolution and
// returns false. It never blocks on the wire.
func (h *Host) Lookup(ip netip.Addr) ([6]byte, bool) {
	ip = ip.Unmap()
	if mac, ok := h.staticMAC(ip); ok {
		return mac, true
	}
	if !h.onLink(ip) || h.isOwn(ip) {
		return [6]byte{}, false
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return [6]byte{}, false
	}
	n := h.neighbors[ip]
	if n != nil && n.state.resolved() {
		mac := n.mac
		h.mu.Unlock()
		return mac, true
	}
	var act neighborAction
	if n == nil {
		act = h.newIncompleteLocked(ip)
	}
	h.mu.Unlock()
	h.act(act)
	return [6]byte{}, false
}

// Counters returns a snapshot of the counters.
func (h *Host) Counters() HostCounters { return h.cnt.snapshot() }

// MAC returns the host's MAC.
func (h *Host) MAC() [6]byte { return h.mac }

// Close stops the reader, closes IO and drops queued frames. It is
// idempotent; every call returns the first call's result.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		h.mu.Lock()
		h.closed = true
		for ip, n := range h.neighbors {
			h.disarmLocked(n)
			n.queue = nil
			delete(h.neighbors, ip)
		}
		started := h.started.Load()
		h.mu.Unlock()
		h.roce.recv.Store(nil)
		h.tcp.Store(nil)
		h.tcpValid.Store(nil)
		if err := h.io.Close(); err != nil {
			h.closeErr = fmt.Errorf("tap: closing the host's FrameIO: %w", err)
		}
		h.loop.stop(started)
		if started {
			<-h.readerEnd
		}
	})
	return h.closeErr
}

func (h *Host) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// readLoop reads frames until IO fails (Close closes it): behind a
// virtio_net_hdr on an offload IO (host_offload.go), else plain.
func (h *Host) readLoop() {
	defer close(h.readerEnd)
	if h.vio != nil {
		h.readFrames(h.vio.ReadVnet, h.handleVnetFrame, vnetHdrLen+maxGSOFrame+readSlack)
		return
	}
	h.readFrames(h.io.ReadFrame, h.handleWireFrame, h.mtu+ethHeaderLen+4+readSlack)
}

// readFrames reads into one reused buffer of size bytes and handles each
// frame under rxMu, until read fails.
func (h *Host) readFrames(read func([]byte) (int, error), handle func([]byte), size int) {
	buf := make([]byte, size)
	for {
		n, err := read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && !h.isClosed() {
				h.logf("tap: host reader stopped: %v", err)
			}
			return
		}
		h.rxMu.Lock()
		handle(buf[:n])
		h.rxMu.Unlock()
	}
}

// handleFrame is the receive path for one frame: counted, recorded,
// processed. It never keeps b.
func (h *Host) handleFrame(b []byte) {
	h.arrived(b, VnetHdr{})
	h.process(b, false)
}

// arrived counts a frame read from the wire and records it in the
// capture, before anything reacts to it: a host port's kernel, or the
// host stack, may answer at once, and the answer must not precede the
// frame in the capture (Wireshark would see a segment ACKed before it was
// sent).
func (h *Host) arrived(b []byte, v VnetHdr) {
	h.cnt.rxFrames.Add(1)
	h.cnt.rxBytes.Add(uint64(len(b)))
	if h.pcap != nil {
		h.capture(b, v) // errors are sticky and reported by the writer's Close
	}
}

// process is the receive path of a frame counted and recorded already.
// tcpValid: a TCP packet in it goes to the TCP stack as validated
// (tcpChecksumTrusted).
func (h *Host) process(b []byte, tcpValid bool) {
	if len(b) < ethHeaderLen {
		h.cnt.malformed.Add(1)
		return
	}
	if !h.acceptMAC([6]byte(b[0:6])) {
		h.cnt.notForUs.Add(1)
		return
	}
	switch binary.BigEndian.Uint16(b[12:]) {
	case etherTypeIPv4:
		h.handleIPv4(b, tcpValid)
	case etherTypeIPv6:
		h.handleIPv6(b, tcpValid)
	case etherTypeARP:
		h.handleARP(b)
	case etherTypeVLAN:
		// No VLAN is configured on the port; a tagged frame is for a VLAN
		// interface we do not have.
		h.cnt.vlanDropped.Add(1)
	default:
		h.cnt.unknownEtherType.Add(1)
	}
}

// acceptMAC is the MAC filter: our own address, broadcast, and the IPv6
// multicast MACs of the groups we joined. A TAP on a bridge also sees
// flooded unicast for other hosts, which must not be answered.
func (h *Host) acceptMAC(dst [6]byte) bool {
	if dst == h.mac || dst == broadcastMAC || h.acceptMcastMAC(dst) {
		return true
	}
	if dst[0] == 0x33 && dst[1] == 0x33 {
		for _, m := range h.groupMACs {
			if m == dst {
				return true
			}
		}
	}
	return false
}

// IPv4 header offsets (RFC 791 §3.1):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Version|  IHL  |Type of Service|          Total Length         |
//	|         Identification        |Flags|      Fragment Offset    |
//	|  Time to Live |    Protocol   |         Header Checksum       |
//	|                       Source Address                          |
//	|                    Destination Address                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
func (h *Host) handleIPv4(frame []byte, tcpValid bool) {
	ip := frame[ethHeaderLen:]
	if len(ip) < ipv4HeaderLen {
		h.cnt.malformed.Add(1)
		return
	}
	ihl := int(ip[0]&0x0F) * 4
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if ip[0]>>4 != 4 || ihl < ipv4HeaderLen || tot < ihl || tot > len(ip) {
		h.cnt.malformed.Add(1)
		return
	}
	if checksumFold(onesSum(0, ip[:ihl])) != 0xFFFF {
		h.cnt.badChecksum.Add(1)
		return
	}
	if binary.BigEndian.Uint16(ip[6:])&0x3FFF != 0 { // MF set or offset ≠ 0
		h.cnt.fragments.Add(1)
		return
	}
	dst := netip.AddrFrom4([4]byte(ip[16:20]))
	if dst.IsMulticast() && h.handleMcastIPv4(frame, ip[:tot], ihl, dst) {
		return
	}
	if !containsAddr(h.addrs4, dst) {
		h.cnt.notOurIP.Add(1)
		return
	}
	ip = ip[:tot] // trailing Ethernet padding is not part of the packet
	payload := ip[ihl:]
	switch ip[9] {
	case ipProtoUDP:
		h.handleUDP(frame, ip, payload, false, ip[1]&3)
	case ipProtoTCP:
		h.deliverTCP(ip, tcpValid)
	case ipProtoICMP:
		h.handleICMPv4(frame, ip, ihl)
	default:
		h.cnt.unknownProto.Add(1)
	}
}

// IPv6 header offsets (RFC 8200 §3):
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Version| Traffic Class |           Flow Label                  |
//	|         Payload Length        |  Next Header  |   Hop Limit   |
//	|                  Source Address (16 bytes, offset 8)          |
//	|               Destination Address (16 bytes, offset 24)       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Extension headers are not walked: RoCEv2, TCP and ND come without them,
// and what does carry them (MLD queries behind a hop-by-hop header) the
// host ignores.
func (h *Host) handleIPv6(frame []byte, tcpValid bool) {
	ip := frame[ethHeaderLen:]
	if len(ip) < ipv6HeaderLen || ip[0]>>4 != 6 {
		h.cnt.malformed.Add(1)
		return
	}
	plen := int(binary.BigEndian.Uint16(ip[4:]))
	if ipv6HeaderLen+plen > len(ip) {
		h.cnt.malformed.Add(1)
		return
	}
	ip = ip[:ipv6HeaderLen+plen]
	dst := netip.AddrFrom16([16]byte(ip[24:40]))
	if dst.IsMulticast() && h.handleMcastIPv6(frame, ip, dst) {
		return
	}
	unicast := containsAddr(h.addrs6, dst)
	if !unicast && !containsAddr(h.groups6, dst) {
		h.cnt.notOurIP.Add(1)
		return
	}
	payload := ip[ipv6HeaderLen:]
	switch ip[6] {
	case ipProtoICMPv6:
		h.handleICMPv6(frame, ip, unicast)
	case ipProtoUDP:
		if !unicast { // no multicast UDP (and no port unreachable for it, RFC 4443 §2.4 e.3)
			h.cnt.notOurIP.Add(1)
			return
		}
		tc := uint8(binary.BigEndian.Uint32(ip) >> 20)
		h.handleUDP(frame, ip, payload, true, tc&3)
	case ipProtoTCP:
		if !unicast {
			h.cnt.notOurIP.Add(1)
			return
		}
		h.deliverTCP(ip, tcpValid)
	default:
		h.cnt.unknownProto.Add(1)
	}
}

// handleUDP demuxes a UDP datagram to one of our unicast addresses: the
// RoCE port goes to the RoCE receiver as the whole, unchanged frame;
// anything else earns a port unreachable. ecn is the IP header's ECN field.
func (h *Host) handleUDP(frame, ip, udp []byte, v6 bool, ecn uint8) {
	if len(udp) < udpHeaderLen {
		h.cnt.malformed.Add(1)
		return
	}
	if ul := int(binary.BigEndian.Uint16(udp[4:])); ul < udpHeaderLen || ul > len(udp) {
		h.cnt.malformed.Add(1)
		return
	}
	if binary.BigEndian.Uint16(udp[2:]) != h.rocePort {
		h.sendPortUnreachable(frame, ip, v6)
		return
	}
	switch ecn {
	case 3:
		h.cnt.ceMarked.Add(1)
	case 1, 2:
		h.cnt.ectMarked.Add(1)
	}
	h.roce.deliver(frame)
}

// deliverTCP hands a TCP packet (trimmed to its IP length) to the TCP
// stack: as validated if tcpValid (set only with a tcpValid handler).
func (h *Host) deliverTCP(ip []byte, tcpValid bool) {
	fp := h.tcp.Load()
	if tcpValid {
		fp = h.tcpValid.Load()
	}
	if fp == nil {
		h.cnt.tcpNoHandler.Add(1)
		return
	}
	h.cnt.tcpRx.Add(1)
	(*fp)(ip)
}

// writeFrame puts one whole frame on the wire (and in the capture). A
// frame shorter than the Ethernet minimum is padded with zeros, as a NIC's
// MAC would, when f has the capacity (all the host's own buffers do).
func (h *Host) writeFrame(f []byte) error { return h.writeFrameVnet(f, VnetHdr{}) }

// writeFrameVnet is writeFrame with the frame's virtio_net_hdr: a TCP
// super-segment or a partial checksum for the kernel to finish (only on an
// offload IO; the zero header is a plain frame).
func (h *Host) writeFrameVnet(f []byte, v VnetHdr) error {
	if n := len(f); n < ethMinFrame && cap(f) >= ethMinFrame {
		f = f[:ethMinFrame]
		clear(f[n:])
	}
	if h.pcap != nil {
		h.capture(f, v)
	}
	// Counted before the write, so that whoever reads the frame off the
	// wire already sees it counted (protocol counters do the same).
	h.cnt.txFrames.Add(1)
	h.cnt.txBytes.Add(uint64(len(f)))
	var err error
	if v == (VnetHdr{}) {
		err = h.io.WriteFrame(f)
	} else {
		err = h.vio.WriteVnet(v, f)
	}
	if err != nil {
		h.cnt.txErrors.Add(1)
		return fmt.Errorf("tap: write frame: %w", err)
	}
	return nil
}

// getTx returns a transmit buffer of txBufLen bytes; put it back with
// h.txBuf.Put.
func (h *Host) getTx() *[]byte { return h.txBuf.Get().(*[]byte) }

// output sends frame (a whole Ethernet frame whose MACs output fills in)
// to the on-link IP dst: at once if the neighbour is resolved, otherwise
// queued (as a copy) while it is resolved. It may modify frame.
func (h *Host) output(frame []byte, dst netip.Addr) error {
	return h.outputVnet(frame, dst, VnetHdr{})
}

// outputVnet is output of a frame with its virtio_net_hdr (writeFrameVnet).
func (h *Host) outputVnet(frame []byte, dst netip.Addr, v VnetHdr) error {
	if mac, ok := h.staticMAC(dst); ok {
		return h.writeTo(frame, mac, v)
	}
	if h.isOwn(dst) {
		if v.Flags&vnetFlagNeedsCsum != 0 {
			finishChecksum(frame, v) // no kernel on the loopback to do it
		}
		return h.loopOut(frame)
	}
	if !h.onLink(dst) {
		h.cnt.noRoute.Add(1)
		return fmt.Errorf("%w: %v", ErrNoRoute, dst)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrHostClosed
	}
	n := h.neighbors[dst]
	if n != nil && n.state.resolved() {
		mac := n.mac
		if n.state == nudStale {
			// RFC 4861 §7.3.3: sending to a STALE neighbour starts the
			// DELAY timer; the frame goes out with the cached address.
			h.setStateLocked(n, nudDelay)
			h.armLocked(n, h.ncfg.DelayFirstProbe)
		}
		h.mu.Unlock()
		return h.writeTo(frame, mac, v)
	}
	var act neighborAction
	if n == nil {
		act = h.newIncompleteLocked(dst)
		n = h.neighbors[dst]
	}
	if len(n.queue) >= h.ncfg.QueueLen {
		// Oldest out, as Linux's unres_qlen does: the newest frames are the
		// ones a retransmitting sender still cares about.
		n.queue[0] = queuedFrame{}
		n.queue = n.queue[1:]
		h.cnt.queueDropped.Add(1)
	}
	q := make([]byte, len(frame), max(len(frame), ethMinFrame))
	copy(q, frame)
	n.queue = append(n.queue, queuedFrame{frame: q, vnet: v})
	h.mu.Unlock()
	h.act(act)
	return nil
}

// writeTo fills in the MACs of frame and writes it.
func (h *Host) writeTo(frame []byte, dst [6]byte, v VnetHdr) error {
	copy(frame[0:6], dst[:])
	copy(frame[6:12], h.mac[:])
	return h.writeFrameVnet(frame, v)
}

// staticMAC maps destinations that need no resolution: IPv4 limited and
// directed broadcast, IPv4 multicast (RFC 1112 §6.4) and IPv6 multicast
// (RFC 2464 §7).
func (h *Host) staticMAC(ip netip.Addr) ([6]byte, bool) {
	switch {
	case ip.Is4() && (ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}) || h.isBroadcast4(ip)):
		return broadcastMAC, true
	case ip.Is4() && ip.IsMulticast():
		a := ip.As4()
		return [6]byte{0x01, 0x00, 0x5e, a[1] & 0x7f, a[2], a[3]}, true
	case ip.Is6() && ip.IsMulticast():
		return multicastMAC(ip), true
	}
	return [6]byte{}, false
}

// onLink reports whether ip is inside one of our prefixes, or is an IPv6
// link-local address and we have IPv6 at all. Nothing else is reachable:
// there is no gateway support.
func (h *Host) onLink(ip netip.Addr) bool {
	for _, p := range h.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return ip.Is6() && ip.IsLinkLocalUnicast() && len(h.addrs6) > 0
}

// isOwn reports whether ip is one of our addresses.
func (h *Host) isOwn(ip netip.Addr) bool {
	if ip.Is4() {
		return containsAddr(h.addrs4, ip)
	}
	return containsAddr(h.addrs6, ip)
}

// sourceFor picks our address to send from towards the on-link ip: one in
// the same prefix, else (IPv6 link-local targets) our link-local address,
// else the first of the family.
func (h *Host) sourceFor(ip netip.Addr) netip.Addr {
	addrs := h.addrs6
	if ip.Is4() {
		addrs = h.addrs4
	}
	for _, a := range addrs {
		for _, p := range h.prefixes {
			if p.Contains(a) && p.Contains(ip) {
				return a
			}
		}
	}
	for _, a := range addrs {
		if a.IsLinkLocalUnicast() == ip.IsLinkLocalUnicast() {
			return a
		}
	}
	if len(addrs) > 0 {
		return addrs[0]
	}
	return netip.Addr{}
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}

// solicitedNode is the solicited-node multicast address of a
// (RFC 4291 §2.7.1): ff02::1:ff00:0/104 plus a's low 24 bits.
func solicitedNode(a netip.Addr) netip.Addr {
	b := a.As16()
	return netip.AddrFrom16([16]byte{0: 0xff, 1: 0x02, 11: 0x01, 12: 0xff, 13: b[13], 14: b[14], 15: b[15]})
}

// multicastMAC is the Ethernet address of IPv6 multicast group g:
// 33:33 and the group's low 32 bits (RFC 2464 §7).
func multicastMAC(g netip.Addr) [6]byte {
	b := g.As16()
	return [6]byte{0x33, 0x33, b[12], b[13], b[14], b[15]}
}

func macString(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// putEth writes an Ethernet II header.
func putEth(f []byte, dst, src [6]byte, etherType uint16) {
	copy(f[0:6], dst[:])
	copy(f[6:12], src[:])
	binary.BigEndian.PutUint16(f[12:], etherType)
}

// putIPv4 writes a 20-byte IPv4 header (no options, DF clear, ID 0) for a
// payload of n bytes, with its checksum.
func putIPv4(ip []byte, proto, ttl uint8, src, dst netip.Addr, n int) {
	ip[0], ip[1] = 0x45, 0
	binary.BigEndian.PutUint16(ip[2:], uint16(ipv4HeaderLen+n))
	clear(ip[4:8])
	ip[8], ip[9] = ttl, proto
	ip[10], ip[11] = 0, 0
	s, d := src.As4(), dst.As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	binary.BigEndian.PutUint16(ip[10:], ^checksumFold(onesSum(0, ip[:ipv4HeaderLen])))
}

// putIPv6 writes a 40-byte IPv6 header (traffic class and flow label 0)
// for a payload of n bytes.
func putIPv6(ip []byte, next, hopLimit uint8, src, dst netip.Addr, n int) {
	binary.BigEndian.PutUint32(ip, 6<<28)
	binary.BigEndian.PutUint16(ip[4:], uint16(n))
	ip[6], ip[7] = next, hopLimit
	s, d := src.As16(), dst.As16()
	copy(ip[8:24], s[:])
	copy(ip[24:40], d[:])
}

// onesSum adds b to a 32-bit ones'-complement accumulator (RFC 1071).
func onesSum(sum uint32, b []byte) uint32 {
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	return sum
}

// checksumFold folds the accumulator to 16 bits (not inverted).
func checksumFold(sum uint32) uint16 {
	for sum > 0xFFFF {
		sum = sum>>16 + sum&0xFFFF
	}
	return uint16(sum)
}

// pseudoSum6 is the accumulator of the IPv6 pseudo-header (RFC 8200 §8.1)
// of the packet ip (its addresses) for an upper-layer packet of n bytes.
func pseudoSum6(ip []byte, proto uint8, n int) uint32 {
	return onesSum(0, ip[8:40]) + uint32(n>>16) + uint32(n&0xFFFF) + uint32(proto)
}
