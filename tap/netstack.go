// TCPStack: gVisor's netstack as the NIC's own TCP: in the TAP mode iWARP
// runs over gVisor's TCP on the same device (nic/README.md, "Modes").
//
// The stack sits at the IP layer. The Host (host.go) owns everything below
// it: it strips Ethernet from inbound frames and hands over whole IPv4/IPv6
// packets carrying TCP (Deliver), and it wraps every packet netstack sends
// (Output) in Ethernet, resolving the next hop with its own ARP/ND. So the
// link endpoint here has no link header and claims almost no capability:
// no link-address resolution (the Host does it), no transmit checksum
// offload (a packet on a real wire needs real checksums; with host GSO the
// kernel finishes them, netstack_gso.go), and receive checksum offload
// only for a packet delivered with DeliverValidated (the kernel vouched
// for it); any other inbound packet is verified.
//
//	Host ── Deliver(IP packet) ──▶ linkEndpoint.InjectInbound ──▶ ipv4/ipv6 ──▶ tcp
//	Host ◀── Output(IP packet) ◀── linkEndpoint.WritePackets ◀── ipv4/ipv6 ◀── tcp
//
// Addresses come from the configured prefixes with one on-link route per
// prefix and no default route: the TAP mode has no gateway, so every peer
// must be on one of the NIC's subnets.
//
// netstack speaks only TCP here: Deliver drops anything else (counted),
// which also keeps netstack from answering ICMP echo itself (the Host does),
// and IPv6 runs with DAD, router solicitation, SLAAC and MLD off so that
// netstack never sends ND or MLD of its own (the Host answers ND).

package tap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/netstack"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// DefaultTCPBuffer is the TCP send and receive buffer maximum of a
// TCPStack whose configuration leaves them zero: iWARP streams want big
// windows.
const DefaultTCPBuffer = 4 << 20

// tcpStackNIC is the ID of the stack's only NIC.
const tcpStackNIC tcpip.NICID = 1

// listenBacklog matches Linux's default somaxconn, as gonet's does.
const listenBacklog = 4096

// TCPStackConfig configures a TCPStack.
type TCPStackConfig struct {
	// Prefixes are the NIC's addresses with their on-link prefixes (IPv4
	// and/or IPv6); each gives the stack an address and an on-link route.
	Prefixes []netip.Prefix
	// MTU is the IP MTU (= the Ethernet MTU); 1500 if 0.
	MTU int
	// Output is called for every IP packet netstack sends: a whole IPv4 or
	// IPv6 packet with final checksums. The slice is valid only during the
	// call. Calls are serialised (Output need not be safe for concurrent
	// use) and must not call Deliver synchronously; they should not block
	// for long, as netstack's TCP processing waits for them.
	Output func(ipPacket []byte) error
	// OutputOffload, if set, replaces Output and turns on host
	// segmentation offload (a Host whose Offload is true:
	// Host.SendIPOffload): netstack then sends TCP super-segments of up to
	// 64 KiB with a partial checksum, and o says what the link must finish
	// (the zero TxOffload: nothing, as for Output).
	OutputOffload func(ipPacket []byte, o TxOffload) error
	// OutputFrame, if set, replaces OutputOffload (host segmentation
	// offload on, as with it) and saves the link a copy of every packet:
	// the packet comes as frame[FrameHeadroom:], the FrameHeadroom bytes
	// before it room for the link's header (Host.SendFrame). frame may be
	// modified and is valid only during the call.
	OutputFrame func(frame []byte, o TxOffload) error
	// SendBuffer and ReceiveBuffer are the TCP buffer maxima; 0 means
	// DefaultTCPBuffer.
	SendBuffer, ReceiveBuffer int
}

// TCPStackStats counts what Deliver and Output did besides the normal
// path. netstack's own counters (checksum errors, retransmissions...) are
// in Stack().Stats().
type TCPStackStats struct {
	// Delivered is the packets handed to netstack.
	Delivered uint64
	// DroppedNotTCP is inbound packets dropped because they were not
	// IPv4/IPv6 carrying TCP (or too short to tell).
	DroppedNotTCP uint64
	// DroppedClosed is inbound packets dropped because the stack was
	// closed.
	DroppedClosed uint64
	// OutputErrors is outbound packets Output refused (lost, as on a
	// wire; TCP retransmits).
	OutputErrors uint64
	// SilencedRSTs is the RSTs not sent at Close for connections that had
	// already ended in TIME_WAIT.
	SilencedRSTs uint64
}

// TCPStack is a gVisor TCP/IP stack with one NIC at the IP layer. Its
// methods are safe for concurrent use.
type TCPStack struct {
	s    *stack.Stack
	link *linkEndpoint

	// mu orders Deliver against Close: Deliver injects under the read
	// lock, Close marks the stack closed under the write lock, so no packet
	// enters a stack being torn down.
	mu     sync.RWMutex
	closed bool
	// closing is set when Close starts: packets still arrive while it
	// waits for FINs in flight (closeLinger), but Close runs once.
	closing atomic.Bool

	delivered, droppedNotTCP, droppedClosed atomic.Uint64
}

// NewTCPStack builds the stack: IPv4, IPv6 and TCP on one NIC with the
// configured addresses and on-link routes, SACK on, Nagle off, buffers per
// cfg.
func NewTCPStack(cfg TCPStackConfig) (*TCPStack, error) {
	if cfg.Output == nil && cfg.OutputOffload == nil && cfg.OutputFrame == nil {
		return nil, errors.New("tap: TCPStackConfig.Output is nil")
	}
	if len(cfg.Prefixes) == 0 {
		return nil, errors.New("tap: TCPStackConfig.Prefixes is empty")
	}
	mtu := cfg.MTU
	if mtu == 0 {
		mtu = 1500
	}
	if mtu < header.IPv4MinimumMTU || mtu > 65535 {
		return nil, fmt.Errorf("tap: MTU %d out of range", mtu)
	}
	s := newNetstack()
	fail := func(err error) (*TCPStack, error) {
		s.Close()
		s.Wait()
		return nil, err
	}
	for _, o := range tcpOptions(cfg) {
		if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, o); err != nil {
			return fail(fmt.Errorf("tap: netstack TCP option %T: %s", o, err))
		}
	}

	link := &linkEndpoint{Endpoint: channel.New(1, uint32(mtu), ""), output: cfg.Output, outputOffload: cfg.OutputOffload,
		outputFrame: cfg.OutputFrame}
	if err := s.CreateNIC(tcpStackNIC, link); err != nil {
		return fail(fmt.Errorf("tap: netstack NIC: %s", err))
	}
	var routes []tcpip.Route
	for _, p := range cfg.Prefixes {
		pa, err := protocolAddress(p)
		if err != nil {
			return fail(err)
		}
		if err := s.AddProtocolAddress(tcpStackNIC, pa, stack.AddressProperties{}); err != nil {
			return fail(fmt.Errorf("tap: netstack address %v: %s", p, err))
		}
		routes = append(routes, tcpip.Route{Destination: pa.AddressWithPrefix.Subnet(), NIC: tcpStackNIC})
	}
	s.SetRouteTable(routes)
	return &TCPStack{s: s, link: link}, nil
}

// newNetstack is a netstack with IPv4, IPv6 and TCP that sends nothing but
// TCP.
func newNetstack() *stack.Stack {
	return stack.New(stack.Options{
		NetworkProtocols: []stack.NetworkProtocolFactory{
			ipv4.NewProtocolWithOptions(ipv4.Options{}), // IGMP off
			ipv6.NewProtocolWithOptions(ipv6.Options{
				// The zero NDP configuration sends no router solicitation and
				// handles no router advertisement; no SLAAC, no link-local
				// address, no MLD: netstack sends nothing but TCP.
				NDPConfigs: ipv6.NDPConfigurations{},
				// DAD off: the Host owns the address on the wire and answers ND.
				DADConfigs: stack.DADConfigurations{DupAddrDetectTransmits: 0},
			}),
		},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
		// A connection to one of the NIC's own addresses stays inside the
		// stack instead of going out to the Host.
		HandleLocal: true,
	})
}

// tcpOptions are the stack's TCP options: SACK on, Nagle off, buffers per
// cfg.
func tcpOptions(cfg TCPStackConfig) []tcpip.SettableTransportProtocolOption {
	sndBuf, rcvBuf := cfg.SendBuffer, cfg.ReceiveBuffer
	if sndBuf <= 0 {
		sndBuf = DefaultTCPBuffer
	}
	if rcvBuf <= 0 {
		rcvBuf = DefaultTCPBuffer
	}
	return []tcpip.SettableTransportProtocolOption{
		new(tcpip.TCPSACKEnabled(true)),
		// Nagle off for every endpoint, including accepted ones (the
		// option is not inherited from a listener): iWARP sends whole FPDUs
		// and wants them on the wire at once (TCP_NODELAY, as siw sets).
		new(tcpip.TCPDelayEnabled(false)),
		new(tcpip.TCPModerateReceiveBufferOption(true)),
		&tcpip.TCPSendBufferSizeRangeOption{Min: 4096, Default: sndBuf, Max: sndBuf},
		&tcpip.TCPReceiveBufferSizeRangeOption{Min: 4096, Default: rcvBuf, Max: rcvBuf},
		// Linux's default congestion control.
		new(tcpip.CongestionControlOption("cubic")),
		// RACK, and with it the tail loss probe, off. netstack fires its
		// probe after 2×SRTT with no floor (Linux waits at least 10 ms), so
		// on a LAN with a sub-millisecond RTT a peer that merely delays its
		// ACK (a busy guest, siw behind a delayed ACK) gets the last segment
		// again: a spurious retransmission Wireshark flags as D-SACK, seen
		// against siw in the interop lab. Duplicate-ACK fast retransmit and
		// the RTO still recover real losses.
		new(tcpip.TCPRecovery(0)),
	}
}

// protocolAddress converts a prefix (an address with its prefix length) to
// netstack's form.
func protocolAddress(p netip.Prefix) (tcpip.ProtocolAddress, error) {
	if !p.IsValid() {
		return tcpip.ProtocolAddress{}, fmt.Errorf("tap: invalid prefix %v", p)
	}
	a, bits := p.Addr(), p.Bits()
	if a.Is4In6() {
		a, bits = a.Unmap(), max(bits-96, 0)
	}
	proto := ipv6.ProtocolNumber
	if a.Is4() {
		proto = ipv4.ProtocolNumber
	}
	return tcpip.ProtocolAddress{
		Protocol:          proto,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFromSlice(a.AsSlice()), PrefixLen: bits},
	}, nil
}

// Stack is the underlying gVisor stack.
func (t *TCPStack) Stack() *stack.Stack { return t.s }

// NICID is the ID of the stack's NIC.
func (t *TCPStack) NICID() tcpip.NICID { return tcpStackNIC }

// Streams returns the stack as a stream.Network for iWARP.
func (t *TCPStack) Streams(cfg stream.TCPConfig) stream.Network {
	return netstack.New(t.s, tcpStackNIC, cfg)
}

// Stats returns the stack's drop and delivery counters.
func (t *TCPStack) Stats() TCPStackStats {
	return TCPStackStats{
		Delivered:     t.delivered.Load(),
		DroppedNotTCP: t.droppedNotTCP.Load(),
		DroppedClosed: t.droppedClosed.Load(),
		OutputErrors:  t.link.outputErrors.Load(),
		SilencedRSTs:  t.link.silencedRSTs.Load(),
	}
}

// Deliver hands an inbound IPv4 or IPv6 packet (no Ethernet header) to the
// stack, which verifies its checksums. The packet is copied; anything but
// TCP is dropped and counted. Safe from any goroutine; a no-op after
// Close.
func (t *TCPStack) Deliver(ipPacket []byte) { t.deliver(ipPacket, false) }

// DeliverValidated is Deliver for a packet whose TCP checksum is known to
// be good (receive checksum offload): the kernel verified it (DATA_VALID)
// or made the packet itself and never computed it (NEEDS_CSUM: the field
// may hold only the pseudo-header sum). netstack then skips its own check.
func (t *TCPStack) DeliverValidated(ipPacket []byte) { t.deliver(ipPacket, true) }

func (t *TCPStack) deliver(ipPacket []byte, validated bool) {
	proto, ok := tcpPacketProtocol(ipPacket)
	if !ok {
		t.droppedNotTCP.Add(1)
		return
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		t.droppedClosed.Add(1)
		return
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: inboundBuffer(ipPacket)})
	t.link.inject(proto, pkt, validated)
	pkt.DecRef()
	t.delivered.Add(1)
}

// tcpPacketProtocol returns the network protocol of an IP packet that
// carries TCP (directly, or in an IPv6 fragment), and false for anything
// else. It only classifies: netstack validates the headers and checksums.
func tcpPacketProtocol(p []byte) (tcpip.NetworkProtocolNumber, bool) {
	if len(p) == 0 {
		return 0, false
	}
	switch header.IPVersion(p) {
	case header.IPv4Version:
		if len(p) < header.IPv4MinimumSize || header.IPv4(p).Protocol() != uint8(header.TCPProtocolNumber) {
			return 0, false
		}
		return header.IPv4ProtocolNumber, true
	case header.IPv6Version:
		if len(p) < header.IPv6MinimumSize {
			return 0, false
		}
		switch next := header.IPv6(p).NextHeader(); next {
		case uint8(header.TCPProtocolNumber):
			return header.IPv6ProtocolNumber, true
		case uint8(header.IPv6FragmentExtHdrIdentifier):
			// The fragment header's first byte is the next header.
			if len(p) >= header.IPv6MinimumSize+header.IPv6FragmentExtHdrLength &&
				p[header.IPv6MinimumSize] == uint8(header.TCPProtocolNumber) {
				return header.IPv6ProtocolNumber, true
			}
		}
	}
	return 0, false
}

// Dial opens a TCP connection to remote from local (the zero Addr lets
// netstack choose), blocking until it is established or ctx ends. Errors
// wrap stream.ErrRefused, stream.ErrTimeout or stream.ErrCanceled where
// they apply.
func (t *TCPStack) Dial(ctx context.Context, local netip.Addr, remote netip.AddrPort) (net.Conn, error) {
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	proto := netProtocolOf(remote.Addr())
	var wq waiter.Queue
	ep, terr := t.s.NewEndpoint(tcp.ProtocolNumber, proto, &wq)
	if terr != nil {
		return nil, dialError(remote, fmt.Errorf("netstack: %s", terr))
	}
	ep.SocketOptions().SetDelayOption(false)
	// Register before Connect so that the outcome cannot be missed.
	entry, notify := waiter.NewChannelEntry(waiter.WritableEvents | waiter.EventHUp | waiter.EventErr)
	wq.EventRegister(&entry)
	defer wq.EventUnregister(&entry)
	if local.IsValid() {
		if terr := ep.Bind(tcpip.FullAddress{Addr: tcpip.AddrFromSlice(local.Unmap().AsSlice())}); terr != nil {
			ep.Close()
			return nil, dialError(remote, fmt.Errorf("netstack: bind %v: %s", local, terr))
		}
	}
	terr = ep.Connect(fullAddress(remote))
	if _, ok := terr.(*tcpip.ErrConnectStarted); ok {
		for connecting(ep) {
			select {
			case <-ctx.Done():
				ep.Close()
				err := ctx.Err()
				if errors.Is(err, context.Canceled) {
					err = fmt.Errorf("%w: %w", stream.ErrCanceled, err)
				} else {
					err = fmt.Errorf("%w: %w", stream.ErrTimeout, err)
				}
				return nil, dialError(remote, err)
			case <-notify:
			}
		}
		// The handshake is over: LastError says how it ended.
		terr = ep.LastError()
	}
	if terr == nil && !established(ep) {
		terr = &tcpip.ErrConnectionReset{} // broken at once, the reason already taken
	}
	if terr != nil {
		ep.Close()
		return nil, dialError(remote, tcpipError(terr))
	}
	return gonet.NewTCPConn(&wq, ep), nil
}

// connecting reports whether a TCP endpoint's handshake is still under way.
func connecting(ep tcpip.Endpoint) bool {
	switch tcp.EndpointState(ep.State()) {
	case tcp.StateConnecting, tcp.StateSynSent, tcp.StateSynRecv:
		return true
	}
	return false
}

// established reports whether a TCP endpoint is connected (data may
// already have been exchanged and closed in order).
func established(ep tcpip.Endpoint) bool {
	switch tcp.EndpointState(ep.State()) {
	case tcp.StateError, tcp.StateClose, tcp.StateInitial, tcp.StateBound:
		return false
	}
	return true
}

func dialError(remote netip.AddrPort, err error) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(remote), Err: err}
}

// tcpipError wraps a netstack error in the matching stream error.
func tcpipError(e tcpip.Error) error {
	switch e.(type) {
	case *tcpip.ErrConnectionRefused:
		return fmt.Errorf("%w: netstack: %s", stream.ErrRefused, e)
	case *tcpip.ErrTimeout:
		return fmt.Errorf("%w: netstack: %s", stream.ErrTimeout, e)
	case *tcpip.ErrConnectionReset:
		return fmt.Errorf("%w: netstack: %s", stream.ErrReset, e)
	case *tcpip.ErrPortInUse, *tcpip.ErrDuplicateAddress:
		return fmt.Errorf("%w: netstack: %s", stream.ErrAddrInUse, e)
	}
	return fmt.Errorf("netstack: %s", e)
}

// Listen listens on addr (port 0: any free port; the unspecified or zero
// address: every address of the stack, IPv4 and IPv6).
func (t *TCPStack) Listen(addr netip.AddrPort) (net.Listener, error) {
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	proto := netProtocolOf(addr.Addr())
	var wq waiter.Queue
	ep, terr := t.s.NewEndpoint(tcp.ProtocolNumber, proto, &wq)
	if terr != nil {
		return nil, listenError(addr, fmt.Errorf("netstack: %s", terr))
	}
	ep.SocketOptions().SetDelayOption(false)
	// SO_REUSEADDR, as Linux servers (and transport/stream's netstack)
	// listen: a port can be listened on again while connections that
	// ended on it wait in TIME_WAIT, so a tool run again at once works.
	ep.SocketOptions().SetReuseAddress(true)
	if terr := ep.Bind(fullAddress(addr)); terr != nil {
		ep.Close()
		return nil, listenError(addr, tcpipError(terr))
	}
	if terr := ep.Listen(listenBacklog); terr != nil {
		ep.Close()
		return nil, listenError(addr, tcpipError(terr))
	}
	return gonet.NewTCPListener(t.s, &wq, ep), nil
}

func listenError(addr netip.AddrPort, err error) error {
	return &net.OpError{Op: "listen", Net: "tcp", Addr: net.TCPAddrFromAddrPort(addr), Err: err}
}

// netProtocolOf is the network protocol for an address: IPv6 for the zero
// Addr (a dual-stack endpoint).
func netProtocolOf(a netip.Addr) tcpip.NetworkProtocolNumber {
	if a.Unmap().Is4() {
		return ipv4.ProtocolNumber
	}
	return ipv6.ProtocolNumber
}

// fullAddress converts an address and port; the zero or unspecified
// address becomes netstack's empty address (any).
func fullAddress(ap netip.AddrPort) tcpip.FullAddress {
	fa := tcpip.FullAddress{Port: ap.Port()}
	if a := ap.Addr().Unmap(); a.IsValid() && !a.IsUnspecified() {
		fa.Addr = tcpip.AddrFromSlice(a.AsSlice())
	}
	return fa
}

// Close first gives FINs in flight a moment to be acknowledged
// (closeLinger), then aborts every connection still open (each peer gets a
// RST), closes every endpoint and the stack, and waits for netstack's
// goroutines. Closing twice does nothing.
//
// Connections already in TIME_WAIT are over: both sides have closed and
// acknowledged, and a host that goes away then sends nothing more (Linux
// drops its TIME_WAIT sockets silently). netstack's Close aborts them like
// any other, and its abort sends a RST, which Wireshark flags as a reset
// of a connection that ended cleanly; so their RSTs are held back (and
// counted in SilencedRSTs).
func (t *TCPStack) Close() {
	if t.closing.Swap(true) {
		return
	}
	t.awaitFINs(closeLinger) // the peers' last ACKs are still delivered
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.link.silenceTimeWait(t.s.RegisteredEndpoints())
	t.s.Close()
	t.s.Wait()
}

// linkEndpoint is the stack's NIC: a channel.Endpoint (which provides the
// attachment and InjectInbound) whose outbound side calls Output directly,
// with no queue and no goroutine on the send path.
type linkEndpoint struct {
	*channel.Endpoint
	output        func([]byte) error
	outputOffload func([]byte, TxOffload) error // set: host GSO (netstack_gso.go)
	outputFrame   func([]byte, TxOffload) error // set: host GSO, packets behind FrameHeadroom

	// injectMu serialises inbound packets, so that rxValidated is the
	// claim of the one packet being injected (see inject).
	injectMu    sync.Mutex
	rxValidated atomic.Bool

	mu           sync.Mutex // serialises Output and guards buf and silenced
	buf          []byte     // reused: each packet is flattened into it
	outputErrors atomic.Uint64
	// silenced holds the connections that were in TIME_WAIT when the stack
	// closed: RSTs on them are not sent (see TCPStack.Close).
	silenced     map[connKey]bool
	silencedRSTs atomic.Uint64
}

// closeLinger bounds how long Close waits for FINs in flight: connections
// the application has closed whose FIN the peer has not acknowledged yet
// (FIN_WAIT_1, CLOSING, LAST_ACK). Aborting them would turn an orderly
// close into a reset on the wire; a short wait lets the last ACK arrive.
const closeLinger = 500 * time.Millisecond

// awaitFINs waits, at most d, until no connection has an unacknowledged
// FIN.
func (t *TCPStack) awaitFINs(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		pending := false
		for _, e := range t.s.RegisteredEndpoints() {
			if ep, ok := e.(*tcp.Endpoint); ok {
				switch tcp.EndpointState(ep.State()) {
				case tcp.StateFinWait1, tcp.StateClosing, tcp.StateLastAck:
					pending = true
				}
			}
		}
		if !pending {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// connKey is a TCP connection as its packets name it: source and
// destination address and port, from this side's point of view.
type connKey struct {
	local, remote netip.AddrPort
}

// silenceTimeWait records the TIME_WAIT connections among eps. It reads
// them before it takes l.mu: an endpoint's Info takes the endpoint's
// lock, which netstack holds while it answers a segment through Output,
// which takes l.mu (a FIN retransmitted into TIME_WAIT as the stack
// closed hung the close for good).
func (l *linkEndpoint) silenceTimeWait(eps []stack.TransportEndpoint) {
	var keys []connKey
	for _, e := range eps {
		ep, ok := e.(*tcp.Endpoint)
		if !ok || tcp.EndpointState(ep.State()) != tcp.StateTimeWait {
			continue
		}
		id := ep.Info().(*stack.TransportEndpointInfo).ID
		keys = append(keys, connKey{
			local:  netip.AddrPortFrom(addrOf(id.LocalAddress), id.LocalPort),
			remote: netip.AddrPortFrom(addrOf(id.RemoteAddress), id.RemotePort),
		})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if l.silenced == nil {
			l.silenced = make(map[connKey]bool)
		}
		l.silenced[k] = true
	}
}

func addrOf(a tcpip.Address) netip.Addr {
	ip, _ := netip.AddrFromSlice(a.AsSlice())
	return ip.Unmap()
}

// silencedRST reports whether b is a TCP RST of a silenced connection.
// Called with l.mu held.
func (l *linkEndpoint) silencedRST(b []byte) bool {
	if len(l.silenced) == 0 || len(b) < 1 {
		return false
	}
	var src, dst netip.Addr
	var tcpHdr []byte
	switch b[0] >> 4 {
	case 4:
		ihl := int(b[0]&0x0f) * 4
		if len(b) < ihl+20 || ihl < 20 || b[9] != 6 {
			return false
		}
		src, dst = netip.AddrFrom4([4]byte(b[12:16])), netip.AddrFrom4([4]byte(b[16:20]))
		tcpHdr = b[ihl:]
	case 6:
		if len(b) < 40+20 || b[6] != 6 {
			return false
		}
		src, dst = netip.AddrFrom16([16]byte(b[8:24])), netip.AddrFrom16([16]byte(b[24:40]))
		tcpHdr = b[40:]
	default:
		return false
	}
	if tcpHdr[13]&0x04 == 0 { // RST
		return false
	}
	sport := uint16(tcpHdr[0])<<8 | uint16(tcpHdr[1])
	dport := uint16(tcpHdr[2])<<8 | uint16(tcpHdr[3])
	return l.silenced[connKey{netip.AddrPortFrom(src, sport), netip.AddrPortFrom(dst, dport)}]
}

// WritePackets implements stack.LinkEndpoint. netstack may call it from
// several goroutines at once.
func (l *linkEndpoint) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, pkt := range pkts.AsSlice() {
		frame := l.flatten(pkt)
		b := frame[l.headroom():]
		if l.silencedRST(b) {
			l.silencedRSTs.Add(1)
			continue
		}
		if err := l.send(frame, pkt); err != nil {
			l.outputErrors.Add(1)
		}
	}
	return pkts.Len(), nil
}

// flatten copies a packet's headers and payload into l.buf, behind the
// headroom, and returns the buffer up to the packet's end.
func (l *linkEndpoint) flatten(pkt *stack.PacketBuffer) []byte {
	room := l.headroom()
	size := room + pkt.Size()
	if cap(l.buf) < size {
		l.buf = make([]byte, size)
	}
	b := l.buf[:size]
	views, off := pkt.AsViewList()
	n := room
	for v := views.Front(); v != nil && n < size; v = v.Next() {
		s := v.AsSlice()
		if off >= len(s) {
			off -= len(s)
			continue
		}
		n += copy(b[n:], s[off:])
		off = 0
	}
	return b[:n]
}

// inject hands pkt to netstack, validated or not. netstack takes a
// packet's checksums as verified when its link claims receive checksum
// offload, and asks the link for that once per packet as it enters
// (stack.NIC's DeliverNetworkPacket); so the claim is made for exactly
// the packet being injected, under injectMu. Nothing else in netstack
// reads the claim: the send path looks only at the TX capabilities.
func (l *linkEndpoint) inject(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer, validated bool) {
	l.injectMu.Lock()
	defer l.injectMu.Unlock()
	if validated {
		l.rxValidated.Store(true)
		defer l.rxValidated.Store(false)
	}
	l.InjectInbound(proto, pkt)
}

// Capabilities implements stack.LinkEndpoint: none (netstack_gso.go adds
// GSO for an offload Host) but receive checksum offload while a validated
// packet is being injected.
func (l *linkEndpoint) Capabilities() stack.LinkEndpointCapabilities {
	c := l.Endpoint.Capabilities()
	if l.rxValidated.Load() {
		c |= stack.CapabilityRXChecksumOffload
	}
	return c
}
