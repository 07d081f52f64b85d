// TCP capture synthesis: a pcap of a stream connection that Wireshark
// dissects as a real TCP conversation, so that tshark's iWARP MPA
// heuristic, which needs the whole connection from the SYN
// (transport/tsharktest/README.md, "MPA"), decodes the FPDUs.
//
// Neither a kernel socket nor the simulated stream shows TCP headers, so
// the tee writes them: it keeps both directions' sequence numbers and turns
// what the connection did into frames,
//
//	TeeConn         SYN, SYN-ACK, ACK (MSS and window-scale options)
//	Write(b)        b as segments of at most the local MSS (PSH on the
//	                last), then the peer's ACK
//	a chunk arrives the chunk as the peer's segments, then our ACK
//	Close           our FIN, the peer's ACK
//	peer's FIN      the peer's FIN, our ACK
//	Abort           our RST; a peer's reset: its RST
//
// with correct IP and TCP checksums, ACKs at least every 64 KiB of data
// (so no window ever fills), and no ACK that repeats the previous one (so
// tshark sees no duplicate ACKs). The segmentation is the tee's, not the
// wire's: the kernel's real segments are invisible through a socket, and
// the simulation's are arbitrary. By default a segment never spans two
// writes or two received chunks; with TeeConfig.NewFramer the segments
// follow the protocol's messages instead, which tshark's MPA dissector needs
// (see Framer). Sequence numbers start at a hash of the addresses, so the
// same run gives the same file.

package streamcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/udp"
)

// Endpoint describes one end of a connection for TeeConn.
type Endpoint struct {
	// MAC is the end's Ethernet address; zero means udp.SyntheticMAC of
	// its IP address (the embedded mode's convention).
	MAC [6]byte
	// Addr is the end's address; zero means the Conn's LocalAddr or
	// RemoteAddr.
	Addr netip.AddrPort
	// MSS is the largest TCP payload of the end's segments, announced in
	// its SYN; zero means 1460 over IPv4 and 1440 over IPv6 (a 1500-byte
	// MTU). Use 65483 to look like Linux loopback.
	MSS int
}

// Window scaling announced in the SYNs: every later window field says
// 65535 << teeWindowShift bytes (8 MiB).
const teeWindowShift = 7

// teeAckEvery is how much data may go unacknowledged in the capture.
const teeAckEvery = 64 << 10

const (
	local  = 0
	remote = 1
)

type teeSide struct {
	mac     net.HardwareAddr
	addr    netip.AddrPort
	mss     int
	nxt     uint32 // next sequence number
	lastAck uint32 // acknowledgement number of the side's latest segment
	acked   bool   // lastAck is valid
	ipID    uint16
	fin     bool
	// framing: framer (from TeeConfig.NewFramer) applies to this side's
	// bytes; pend holds the start of an incomplete message, at stream
	// offset pendOff.
	framing bool
	framer  Framer
	pendOff int64
	opened  bool // the first message was written
	pend    []byte
}

// maxPending bounds the bytes held back for a Framer (an MPA FPDU
// is at most 65543 bytes); beyond it framing stops.
const maxPending = 256 << 10

type receiver struct {
	onData  func([]byte)
	onClose func(error)
}

// teeConn records a Conn's traffic as TCP frames.
type teeConn struct {
	c    stream.Conn
	w    *pcap.Writer
	now  func() time.Time
	recv atomic.Pointer[receiver]

	mu    sync.Mutex
	side  [2]teeSide
	reset bool // a RST was recorded: nothing follows
	sbuf  gopacket.SerializeBuffer
	eth   layers.Ethernet
	ip4   layers.IPv4
	ip6   layers.IPv6
	tcp   layers.TCP
}

// TeeConn returns a stream.Conn that behaves like c and writes its
// conversation into w as Ethernet/IP/TCP frames, stamped by now (time.Now
// for kernel TCP, transport.VirtualTimestamps(clk) in a simulation); it is
// TeeConnWith without a Leading function. See TeeConnWith.
func TeeConn(c stream.Conn, w *pcap.Writer, local, remote Endpoint, now func() time.Time) stream.Conn {
	return TeeConnWith(c, w, TeeConfig{Local: local, Remote: remote, Now: now})
}

// TeeConfig configures TeeConnWith.
type TeeConfig struct {
	// Local and Remote describe the two ends.
	Local, Remote Endpoint
	// Now stamps the frames: time.Now for kernel TCP,
	// transport.VirtualTimestamps(clk) in a simulation.
	Now func() time.Time
	// NewFramer, if set, gives each direction a Framer, so that the
	// capture's segments follow the protocol's messages: the first message
	// of each direction has a segment of its own, and every other segment
	// holds whole messages (as many as fit in the MSS; a longer message is
	// cut into MSS-sized segments, the last ending with it); the bytes of
	// an incomplete message are held back from the capture (never from the
	// receiver) until it is complete.
	//
	// Dissectors that find their messages at segment starts need this when
	// chunks split and coalesce arbitrarily: tshark 4.0's iWARP dissector
	// recognises the MPA request and reply only at the start of a segment,
	// loses the FPDU framing when FPDU bytes share the reply's segment, and
	// loses it again whenever a segment ends within the first 8 bytes of an
	// FPDU. The iwarp package has the iWARP Framer (the MPA Request or
	// Reply, then FPDUs with or without markers): this package does not
	// parse RDMA headers.
	NewFramer func() Framer
}

// A Framer tells where the messages of one direction of a stream begin
// and end. Given bytes p that start a message at stream offset off (from
// the direction's first byte), it returns the message's length, 0 when it
// needs more bytes to tell, or a negative number when the bytes do not
// start a message it knows (framing then stops for that direction). It is
// called in stream order, and again for the same offset when it asked for
// more bytes or the message was not complete yet.
type Framer func(off int64, p []byte) int

// TeeConnWith returns a stream.Conn that behaves like c and writes its
// conversation into w as Ethernet/IP/TCP frames. The handshake is written
// at once, in the direction c.Active() says, so wrap c right after Dial or
// accept, before any Write and before SetReceiver; install the receiver on
// the tee. Both addresses must be of one family. Capture errors do not
// disturb the connection: they are sticky in w and reported by its Close,
// which is the caller's (w may be shared by several tees; each connection
// needs distinct addresses or ports to stay a distinct TCP stream in
// Wireshark).
//
// For a simulated pair, one tee at either end records the whole
// conversation: what that end wrote and what it received (with any
// corruption the receiver saw).
func TeeConnWith(c stream.Conn, w *pcap.Writer, cfg TeeConfig) stream.Conn {
	local, remote := cfg.Local, cfg.Remote
	if !local.Addr.IsValid() {
		local.Addr = c.LocalAddr()
	}
	if !remote.Addr.IsValid() {
		remote.Addr = c.RemoteAddr()
	}
	local.Addr, remote.Addr = stream.UnmapPort(local.Addr), stream.UnmapPort(remote.Addr)
	v4 := local.Addr.Addr().Is4()
	if v4 != remote.Addr.Addr().Is4() {
		panic(fmt.Sprintf("streamcap: TeeConn: addresses of different families: %v and %v", local.Addr, remote.Addr))
	}
	t := &teeConn{c: c, w: w, now: cfg.Now, sbuf: gopacket.NewSerializeBuffer()}
	for i, e := range [2]Endpoint{local, remote} {
		s := &t.side[i]
		s.addr = e.Addr
		mac := e.MAC
		if mac == [6]byte{} {
			mac = udp.SyntheticMAC(e.Addr.Addr())
		}
		s.mac = net.HardwareAddr(mac[:])
		s.mss = teeMSS(e.MSS, v4)
		s.nxt = isn(e.Addr, [2]Endpoint{local, remote}[1-i].Addr)
		s.ipID = uint16(s.nxt >> 7)
		if cfg.NewFramer != nil {
			s.framer, s.framing = cfg.NewFramer(), true
		}
	}
	t.handshake(c.Active())
	return t
}

// teeMSS applies the default and the IP length limit.
func teeMSS(mss int, v4 bool) int {
	limit := 65535 - 20 // IPv6: the payload length covers TCP header and data
	if v4 {
		limit = 65535 - 20 - 20
	}
	switch {
	case mss <= 0 && v4:
		return 1460
	case mss <= 0:
		return 1440
	}
	return min(mss, limit)
}

// isn derives an initial sequence number from the connection's addresses.
func isn(from, to netip.AddrPort) uint32 {
	h := fnv.New32a()
	b, _ := from.MarshalBinary()
	h.Write(b)
	b, _ = to.MarshalBinary()
	h.Write(b)
	return h.Sum32()
}

func (t *teeConn) handshake(active bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	client, server := local, remote
	if !active {
		client, server = remote, local
	}
	t.emit(client, tcpFlags{syn: true}, nil)
	t.emit(server, tcpFlags{syn: true, ack: true}, nil)
	t.emit(client, tcpFlags{ack: true}, nil)
}

type tcpFlags struct{ syn, ack, psh, fin, rst bool }

// emit writes one segment from side `from`, advancing its sequence number,
// stamped under the writer's lock (pcap.Writer.WriteFrameNow) so that records
// of other connections and links sharing the file keep time order.
func (t *teeConn) emit(from int, f tcpFlags, payload []byte) {
	s, peer := &t.side[from], &t.side[1-from]
	t.tcp = layers.TCP{
		SrcPort: layers.TCPPort(s.addr.Port()),
		DstPort: layers.TCPPort(peer.addr.Port()),
		Seq:     s.nxt,
		SYN:     f.syn, ACK: f.ack, PSH: f.psh, FIN: f.fin, RST: f.rst,
		Window: 65535,
	}
	if f.ack {
		t.tcp.Ack = peer.nxt
		s.lastAck, s.acked = peer.nxt, true
	}
	if f.syn {
		var mss [2]byte
		binary.BigEndian.PutUint16(mss[:], uint16(min(s.mss, 65535)))
		t.tcp.Options = []layers.TCPOption{
			{OptionType: layers.TCPOptionKindMSS, OptionData: mss[:]},
			{OptionType: layers.TCPOptionKindNop},
			{OptionType: layers.TCPOptionKindWindowScale, OptionData: []byte{teeWindowShift}},
		}
	}
	var ip gopacket.NetworkLayer
	t.eth = layers.Ethernet{SrcMAC: s.mac, DstMAC: peer.mac}
	if s.addr.Addr().Is4() {
		t.eth.EthernetType = layers.EthernetTypeIPv4
		t.ip4 = layers.IPv4{
			Version: 4, IHL: 5, TTL: 64, Id: s.ipID, Flags: layers.IPv4DontFragment,
			Protocol: layers.IPProtocolTCP,
			SrcIP:    s.addr.Addr().AsSlice(), DstIP: peer.addr.Addr().AsSlice(),
		}
		s.ipID++
		ip = &t.ip4
	} else {
		t.eth.EthernetType = layers.EthernetTypeIPv6
		t.ip6 = layers.IPv6{
			Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP,
			SrcIP: s.addr.Addr().AsSlice(), DstIP: peer.addr.Addr().AsSlice(),
		}
		ip = &t.ip6
	}
	if err := t.tcp.SetNetworkLayerForChecksum(ip); err != nil {
		panic(err) // IPv4 and IPv6 are always accepted
	}
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	err := gopacket.SerializeLayers(t.sbuf, opts, &t.eth, ip.(gopacket.SerializableLayer), &t.tcp, gopacket.Payload(payload))
	if err != nil {
		panic(err) // lengths are bounded by the MSS: cannot fail
	}
	_ = t.w.WriteFrameNow(t.now, t.sbuf.Bytes())
	s.nxt += uint32(len(payload))
	if f.syn || f.fin {
		s.nxt++
	}
}

// ackIfNew writes a pure ACK from side `from` if it acknowledges something
// the side has not acknowledged yet.
func (t *teeConn) ackIfNew(from int) {
	s := &t.side[from]
	if s.acked && s.lastAck == t.side[1-from].nxt {
		return
	}
	t.emit(from, tcpFlags{ack: true}, nil)
}

// data records b, sent by side `from`, in segments that follow the
// messages its Framer finds.
func (t *teeConn) data(from int, b []byte) {
	s := &t.side[from]
	if !s.framing {
		t.segments(from, b)
		return
	}
	s.pend = append(s.pend, b...)
	p := s.pend
	mss := s.mss
	seg, off := 0, 0 // the segment being packed is p[seg:off]; p[:off] are whole messages
	for off < len(p) {
		n := s.framer(s.pendOff+int64(off), p[off:])
		if n < 0 {
			s.framing = false // not a message: record the rest as it comes
			break
		}
		if n == 0 || n > len(p)-off {
			break // incomplete: wait for more bytes
		}
		if off+n-seg > mss {
			if off > seg {
				t.segments(from, p[seg:off])
			}
			seg = off
		}
		off += n
		if off-seg > mss || !s.opened { // a message longer than the MSS, or the first: alone
			t.segments(from, p[seg:off])
			seg, s.opened = off, true
		}
	}
	if !s.framing || len(p)-off > maxPending {
		s.framing = false
		off = len(p)
	}
	t.segments(from, p[seg:off])
	s.pend, s.pendOff = append(p[:0], p[off:]...), s.pendOff+int64(off)
}

// flush records what side `from` holds back, before its FIN or a RST.
func (t *teeConn) flush(from int) {
	s := &t.side[from]
	if p := s.pend; len(p) > 0 {
		s.pend, s.framing = nil, false
		t.segments(from, p)
	}
}

// segments writes b as segments from side `from`, acknowledged by the
// other.
func (t *teeConn) segments(from int, b []byte) {
	if t.reset || t.side[from].fin || len(b) == 0 {
		return
	}
	mss := t.side[from].mss
	unacked := 0
	for len(b) > 0 {
		n := min(len(b), mss)
		t.emit(from, tcpFlags{ack: true, psh: n == len(b)}, b[:n])
		b = b[n:]
		if unacked += n; unacked >= teeAckEvery {
			t.ackIfNew(1 - from)
			unacked = 0
		}
	}
	t.ackIfNew(1 - from)
}

// fin writes side `from`'s FIN and the other side's ACK of it.
func (t *teeConn) fin(from int) {
	if t.reset || t.side[from].fin {
		return
	}
	t.flush(from)
	t.side[from].fin = true
	t.emit(from, tcpFlags{fin: true, ack: true}, nil)
	t.ackIfNew(1 - from)
}

// rst writes side `from`'s RST; nothing follows it.
func (t *teeConn) rst(from int) {
	if t.reset {
		return
	}
	t.flush(local)
	t.flush(remote)
	t.reset = true
	t.emit(from, tcpFlags{rst: true, ack: true}, nil)
}

// Write implements stream.Conn; refused bytes are not recorded.
func (t *teeConn) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.c.Write(b)
	if n > 0 {
		t.data(local, b[:n])
	}
	return n, err
}

// SetReceiver implements stream.Conn.
func (t *teeConn) SetReceiver(onData func(p []byte), onClose func(err error)) {
	t.recv.Store(&receiver{onData, onClose})
	t.c.SetReceiver(t.arrive, t.end)
}

func (t *teeConn) arrive(p []byte) {
	t.mu.Lock()
	t.data(remote, p)
	t.mu.Unlock()
	if r := t.recv.Load(); r != nil && r.onData != nil {
		r.onData(p)
	}
}

func (t *teeConn) end(err error) {
	t.mu.Lock()
	switch {
	case err == nil: // not a valid reason; record nothing
	case errors.Is(err, io.EOF):
		t.fin(remote)
	case errors.Is(err, stream.ErrReset):
		t.rst(remote)
	case errors.Is(err, stream.ErrAborted):
		// The RST was recorded by Abort.
	default:
		t.rst(local) // the local stack gave up (a timeout, an error)
	}
	t.mu.Unlock()
	if r := t.recv.Load(); r != nil && r.onClose != nil {
		r.onClose(err)
	}
}

// SetWritable implements stream.Conn.
func (t *teeConn) SetWritable(f func()) { t.c.SetWritable(f) }

// Buffered implements stream.Conn.
func (t *teeConn) Buffered() int { return t.c.Buffered() }

// Close implements stream.Conn.
func (t *teeConn) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.c.Close()
	if err == nil {
		t.fin(local)
	}
	return err
}

// Abort implements stream.Conn.
func (t *teeConn) Abort() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.c.Abort()
	if err == nil && !(t.side[local].fin && t.side[remote].fin) {
		t.rst(local)
	}
	return err
}

// LocalAddr implements stream.Conn.
func (t *teeConn) LocalAddr() netip.AddrPort { return t.c.LocalAddr() }

// RemoteAddr implements stream.Conn.
func (t *teeConn) RemoteAddr() netip.AddrPort { return t.c.RemoteAddr() }

// Active implements stream.Conn.
func (t *teeConn) Active() bool { return t.c.Active() }
