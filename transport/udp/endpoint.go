// Package udp is the link of rnic's embedded mode (nic/README.md, "Modes"): a
// NIC owns an IP address and the RoCEv2 UDP port through ordinary kernel
// UDP sockets, with no root and no TAP device.
//
// The RoCE engine keeps speaking whole Ethernet frames. Endpoint translates:
// Send takes the frame the engine built, checks that a socket can reproduce
// its IP and UDP headers exactly, and sends its UDP payload (BTH through
// ICRC, untouched) from the frame's UDP source port to its destination; the
// receive loop reads datagrams in batches and rebuilds around each the
// Ethernet/IP/UDP frame it arrived in. Because the RoCEv2 ICRC covers the
// IP and UDP headers, the rebuilt header must be the one that was on the
// wire; between rnic endpoints it is, since both sides follow one
// convention (IPv4 with DF and ID 0, no options; see header.go). A foreign
// peer's headers (an rxe sending a running IP ID, say) cannot be seen
// through a socket: use the tap mode for those.
//
// Per-QP UDP source ports work as on hardware: each source port gets its own
// send socket bound to (Addr, port), opened on first use.
//
// Two endpoints cannot share an address and port. On IPv4 loopback give
// each endpoint its own address (127.0.0.2, 127.0.0.3, ...: all of
// 127.0.0.0/8 is local); IPv6 loopback has only ::1, so a pair there needs
// distinct ports, and each side must send to the other's port.
//
// Two endpoints of one process that both loop (Config.Loopback) hand
// frames to each other in memory, rebuilt as the socket would deliver
// them (loopback_linux.go): rnicd's NICs.
//
// A receiver that times its peer (the conformance tester) sets
// Config.RecvTimestamps and reads Arrival in its callback: the kernel's
// receive time of the datagram (SO_TIMESTAMPNS), which does not depend on
// how late the receive loop ran.
//
// The implementation is Linux-only (recvmmsg, sendmmsg, ancillary data);
// elsewhere Open returns errors.ErrUnsupported.
//
// This file holds the configuration and the platform-independent part of
// the Endpoint; socket_linux.go, send_linux.go and recv_linux.go hold the
// system calls.
package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/transport"
)

// DefaultPort is the IANA RoCEv2 UDP port.
const DefaultPort = 4791

// Defaults for Config fields left zero.
const (
	DefaultBatchSize   = 32
	DefaultMaxDatagram = 9216    // above any RoCEv2 packet on a 9000-byte MTU
	DefaultRecvBuffer  = 4 << 20 // SO_RCVBUF asked for; the kernel caps it at net.core.rmem_max
)

// Config configures an Endpoint.
type Config struct {
	// Addr is the NIC's IP address, IPv4 or IPv6 (an IPv4-mapped address
	// counts as IPv4). Required. It must be local to this host.
	Addr netip.Addr
	// Port is the RoCEv2 UDP port the NIC listens on; 0 means DefaultPort.
	Port uint16
	// MAC is the NIC's MAC, the destination of the frames synthesized on
	// receipt; zero means SyntheticMAC(Addr).
	MAC [6]byte
	// BatchSize is how many datagrams one recvmmsg reads and one sendmmsg
	// sends at most; 0 means DefaultBatchSize.
	BatchSize int
	// MaxDatagram is the largest UDP payload received whole; longer
	// datagrams are dropped and counted as Truncated. 0 means
	// DefaultMaxDatagram.
	MaxDatagram int
	// RecvBuffer is the SO_RCVBUF asked for on the listening socket; 0
	// means DefaultRecvBuffer.
	RecvBuffer int
	// Reseal, if set, is called on a private copy of an outgoing frame
	// whose UDP source port had to be replaced by Port (Stats.Fallbacks),
	// after the port was rewritten in the copy and before it is sent. It
	// should recompute whatever covers the port; for RoCEv2 that is the
	// ICRC (decode with roce/wire and call Frame.Seal). Without it such a
	// frame leaves with an ICRC the peer will not accept.
	Reseal func(frame []byte)
	// NoPoll keeps the receive loop from polling its socket after a
	// datagram (transport/poll): for a NIC whose users already spin on
	// memory, as rnicd's clients do on its rings, a third spinner takes
	// a CPU from them (8-byte WRITE round trip through rnicd 27 -> 102 µs).
	NoPoll bool
	// Loopback hands a frame for another endpoint of this process that
	// loops too to it in memory, not through the kernel
	// (loopback_linux.go): two NICs of one rnicd.
	Loopback bool
	// RecvTimestamps asks the kernel for each datagram's receive time
	// (SO_TIMESTAMPNS), which Arrival returns during the receive
	// callback: for a receiver that times its peer (the conformance
	// tester), not how late the receive loop ran. A looped frame's time
	// is when it was queued.
	RecvTimestamps bool
}

// Endpoint is one NIC's attachment to the host's UDP stack. It implements
// transport.BatchEndpoint. Its methods are safe for concurrent use; the
// receivers are called from one goroutine.
type Endpoint struct {
	cfg    Config
	ctr    counters
	recv   atomic.Pointer[func(frame []byte)]
	batch  atomic.Pointer[func(frames [][]byte)]
	closed atomic.Bool
	// rx is held while a receiver runs, one call at a time (the
	// transport.Endpoint contract): the socket's loop, the looped frames'
	// or a group's loop.
	rx sync.Mutex
	// arrival is the receive time, in Unix nanoseconds, of the frame
	// being handed over (0: unknown); written and read under rx.
	arrival int64
	sys     sysState // sockets and the receive loop (socket_linux.go)
}

var (
	_ transport.BatchEndpoint = (*Endpoint)(nil)
	_ transport.ArrivalTimer  = (*Endpoint)(nil)
)

// Open binds cfg.Addr and cfg.Port and starts receiving.
func Open(cfg Config) (*Endpoint, error) {
	if !cfg.Addr.IsValid() {
		return nil, errors.New("udp: Config.Addr is required")
	}
	if cfg.Addr.Zone() != "" {
		return nil, fmt.Errorf("udp: zoned address %v: link-local addresses are not supported", cfg.Addr)
	}
	cfg.Addr = cfg.Addr.Unmap()
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.MAC == [6]byte{} {
		cfg.MAC = SyntheticMAC(cfg.Addr)
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.MaxDatagram <= 0 {
		cfg.MaxDatagram = DefaultMaxDatagram
	}
	if cfg.MaxDatagram > 65535-udpLen {
		return nil, fmt.Errorf("udp: MaxDatagram %d exceeds the largest UDP payload", cfg.MaxDatagram)
	}
	if cfg.RecvBuffer <= 0 {
		cfg.RecvBuffer = DefaultRecvBuffer
	}
	e := &Endpoint{cfg: cfg}
	if err := e.open(); err != nil {
		return nil, fmt.Errorf("udp: open %v: %w", netip.AddrPortFrom(cfg.Addr, cfg.Port), err)
	}
	return e, nil
}

// Addr returns the endpoint's IP address.
func (e *Endpoint) Addr() netip.Addr { return e.cfg.Addr }

// Port returns the endpoint's RoCEv2 UDP port.
func (e *Endpoint) Port() uint16 { return e.cfg.Port }

// MAC returns the endpoint's MAC, for the engine's own address.
func (e *Endpoint) MAC() [6]byte { return e.cfg.MAC }

// Send implements transport.Endpoint. It sends the UDP payload of frame
// with one sendmsg from the frame's UDP source port to its destination,
// with the frame's TOS (traffic class) and TTL (hop limit). The frame must
// come from the endpoint's address and be what a socket sends: IPv4 with
// DF, ID 0 and no options, or IPv6 without extension headers, and no
// 802.1Q tag; anything else is refused with ErrMalformed or
// ErrUnrepresentable and counted. An IPv6 flow label is not reproduced: the
// socket sends 0 (the ICRC masks it). Ethernet addresses are not used.
func (e *Endpoint) Send(frame []byte) error {
	if e.closed.Load() {
		return transport.ErrClosed
	}
	if len(frame) == 0 {
		e.ctr.send.malformed.Add(1)
		return transport.ErrEmptyFrame
	}
	return e.send(frame)
}

// SendBatch sends frames like Send, as few sendmmsg calls as the frames'
// source ports allow (consecutive frames from one port share a call). Every
// frame is attempted; the first error is returned.
func (e *Endpoint) SendBatch(frames [][]byte) error {
	if e.closed.Load() {
		return transport.ErrClosed
	}
	return e.sendBatch(frames)
}

// SetReceiver implements transport.Endpoint. It is used for arrivals while
// no batch receiver is installed.
func (e *Endpoint) SetReceiver(f func(frame []byte)) { e.recv.Store(&f) }

// SetBatchReceiver implements transport.BatchEndpoint: while f is non-nil,
// the datagrams of each recvmmsg call are handed to it in one call.
func (e *Endpoint) SetBatchReceiver(f func(frames [][]byte)) { e.batch.Store(&f) }

// Close implements transport.Endpoint: it closes every socket and waits for
// the receive loop to end. It must not be called from a receiver (it would
// wait for itself). Closing twice is harmless.
func (e *Endpoint) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	return e.close()
}

// Stats returns a snapshot of the endpoint's counters.
func (e *Endpoint) Stats() Stats {
	s := e.ctr.snapshot()
	s.LoopbackDrops = e.loopDrops()
	return s
}

// Arrival implements transport.ArrivalTimer: with Config.RecvTimestamps,
// when the kernel received the frame being handed to the receiver (a
// looped frame: when it was queued); otherwise, or outside a receive
// callback, the zero Time. The time has no monotonic reading: subtract
// Arrivals from each other, not from time.Now across a clock step.
func (e *Endpoint) Arrival() time.Time {
	if e.arrival == 0 {
		return time.Time{}
	}
	return time.Unix(0, e.arrival)
}

// deliver hands frames that arrived together to the installed receiver.
// They are counted first, so that a receiver that looks at Stats sees
// itself counted. stamps, nil unless Config.RecvTimestamps, holds each
// frame's receive time for Arrival.
func (e *Endpoint) deliver(frames [][]byte, stamps []int64) {
	if len(frames) == 0 {
		return
	}
	e.rx.Lock()
	defer e.rx.Unlock()
	bf, rf := e.batch.Load(), e.recv.Load()
	switch {
	case bf != nil && *bf != nil:
		e.ctr.recv.received.Add(uint64(len(frames)))
		if stamps != nil {
			e.arrival = stamps[0]
		}
		(*bf)(frames)
	case rf != nil && *rf != nil:
		e.ctr.recv.received.Add(uint64(len(frames)))
		for i, f := range frames {
			if stamps != nil {
				e.arrival = stamps[i]
			}
			(*rf)(f)
		}
	default:
		e.ctr.recv.discarded.Add(uint64(len(frames)))
	}
	e.arrival = 0
}
