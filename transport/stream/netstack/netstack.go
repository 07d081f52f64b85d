// gVisor netstack TCP: the iWARP stream of the TAP mode (nic/README.md,
// "Modes"), where the NIC has its own TCP/IP stack on the TAP
// (tap.TCPStack) instead of the host's.
//
// A Conn wraps a netstack tcpip.Endpoint in the event-driven stream.Conn
// contract with the same structure as the kernel's (kerneltcp.Conn):
//
//   - Receiving: a reader goroutine, started by the first SetReceiver (so
//     bytes that arrive earlier wait in the endpoint's receive buffer),
//     reads into one reused buffer of TCPConfig.ReadBuffer bytes and hands
//     each read to onData; the read that fails ends the loop with onClose.
//   - Sending: Write copies into a queue bounded by TCPConfig.SendBuffer
//     and never waits for the endpoint. When nothing is queued it first
//     tries a non-blocking write straight into the endpoint (netstack's
//     Write never blocks: it takes what fits in the send buffer); whatever
//     the endpoint does not take is queued for a writer goroutine, started
//     on first need, which waits for the endpoint to become writable.
//
// Records (WriteRecords, the stream.RecordWriter): netstack's TCP makes
// one segment of each endpoint Write, merges whole queued writes while
// they fit (one segment; behind an offload NIC, one super-segment of up
// to the NIC's GSO size), and splits a write only where it is larger than
// that or than the peer's window. Without offload each record is
// therefore its own endpoint Write, offered only whole: netstack's Write
// takes the prefix that fits its send buffer, and it has no query of the
// free space (SendQueueSizeOption is not implemented for TCP), so the
// record is offered through a Payloader (recordReader) that refuses the
// copy when netstack asks for fewer bytes than the record, which it does
// exactly when the record does not fit (it copies min(free space, Len())
// in chunks of up to buffer.MaxChunkSize). A refused Write queues
// nothing; the writer waits for netstack's writable notification, which
// comes once the buffer has drained below half, and offers the record
// again. Records larger than a chunk or half the send buffer are offered
// like Write's bytes (a prefix may be taken): they span segments anyway,
// and waiting for that much room might never end.
//
// Behind an offload NIC (host or gVisor GSO: the TAP with --tap-offload)
// a record per Write would cost a pass through netstack and a TAP write
// per segment. There the records go in batches (batch): a run of records
// of exactly SegmentPayload bytes, closed by the first shorter one (a
// message's last FPDU), up to what netstack sends as one super-segment,
// in one Write, offered whole like a record; when the batch does not fit
// netstack's send buffer, its first record alone, as without offload.
// netstack sends the batch as one super-segment and the offload cuts it
// every SegmentPayload bytes from its start (gso.MSS is the sender's
// MaxPayloadSize, the MSS less the largest options, SACK blocks included,
// which is what SegmentPayload computes), so every cut falls on a record
// bound, and the short record, last, ends the last segment. A batch ends
// at a short record rather than carrying it in its middle (which would
// shift every later cut into a record) and rather than being padded
// (MPA has no filler between FPDUs).
//
// What no Write can steer is netstack merging queued writes. When a batch
// waits in netstack (the congestion window or the peer's window is full)
// and later batches join it in one super-segment, the cuts after its short
// record fall inside records until that super-segment ends; a cut at the
// peer's window edge does the same. netstack exports neither its unsent
// bytes nor its windows, so the Conn cannot wait for them as siw does
// (siw resets its segment accounting when the socket's send queue is
// empty and trims the next FPDU to the rest of the segment). RFC 5044
// makes alignment the sender's SHOULD and requires receivers to take
// FPDUs across segments (rnic's deframer and siw's do): the decision is
// to let FPDUs cross there rather than give up offload, which makes the
// TAP mode about four times cheaper per byte (benchtable's TAP rows). With the window open every
// segment begins with an FPDU; under load most do (records_gso_test.go
// measures both). Exact alignment under load would need segmentation
// below netstack that knows the record bounds, such as the TAP coalescing
// netstack's own MSS segments into super-segments.
//
// The goroutines wait on channels signalled by waiter.Queue channel
// entries (gonet's pattern): netstack notifies with its own locks held, so
// nothing is ever called on the endpoint from inside a notification.
//
// netstack reports why a connection broke (RST, retransmission timeout)
// once: the first Read or Write after the event consumes the reason and
// later calls get a bare "closed". brokenCause settles the reason when the
// reader or the writer got only the bare error.

package netstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/internal/connbase"
)

// The parts of a connection and a listener shared with kernel TCP.
type (
	connBase     = connbase.Conn
	listenerBase = connbase.Listener
)

// netstackListenBacklog matches Linux's default somaxconn.
const netstackListenBacklog = 4096

// brokenSettle bounds how long a goroutine that saw a connection break
// without its reason waits for the goroutine that got the reason to record
// it.
const brokenSettle = 100 * time.Millisecond

// Network is a gVisor TCP/IP stack as a stream.Network: connections are
// netstack TCP endpoints on one NIC of the stack.
type Network struct {
	s   *stack.Stack
	nic tcpip.NICID
	cfg stream.TCPConfig
}

var _ stream.Network = (*Network)(nil)

// New returns the Network of TCP connections on NIC nic of s,
// configured by cfg (SendBuffer, ReadBuffer, Linger, DialTimeout as for
// kernel TCP). The stack's TCP options (buffer sizes, SACK) are the
// caller's.
func New(s *stack.Stack, nic tcpip.NICID, cfg stream.TCPConfig) *Network {
	return &Network{s: s, nic: nic, cfg: cfg.WithDefaults()}
}

// Listen implements stream.Network.
func (n *Network) Listen(addr netip.AddrPort) (stream.Listener, error) {
	l, err := n.ListenNetstack(addr)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// ListenNetstack listens on addr (port 0: a free port, see Addr; the zero
// or unspecified address: every address, IPv4 and IPv6). No connection is
// accepted before SetAcceptor.
func (n *Network) ListenNetstack(addr netip.AddrPort) (*Listener, error) {
	addr = stream.UnmapPort(addr)
	wq := new(waiter.Queue)
	ep, terr := n.s.NewEndpoint(tcp.ProtocolNumber, netstackProtocol(addr.Addr()), wq)
	if terr != nil {
		return nil, fmt.Errorf("netstack: listen %v: %w", addr, netstackErr(terr))
	}
	ep.SocketOptions().SetDelayOption(false)
	// SO_REUSEADDR, as siw's listeners and Go's kernel ones: a port
	// can be listened on again while connections it accepted live on.
	ep.SocketOptions().SetReuseAddress(true)
	if terr := ep.Bind(n.fullAddress(addr, false)); terr != nil {
		ep.Close()
		return nil, fmt.Errorf("netstack: listen %v: %w", addr, netstackErr(terr))
	}
	if terr := ep.Listen(netstackListenBacklog); terr != nil {
		ep.Close()
		return nil, fmt.Errorf("netstack: listen %v: %w", addr, netstackErr(terr))
	}
	la, terr := ep.GetLocalAddress()
	if terr != nil {
		ep.Close()
		return nil, fmt.Errorf("netstack: listen %v: %w", addr, netstackErr(terr))
	}
	bound := netip.AddrPortFrom(addr.Addr(), la.Port)
	l := &Listener{n: n, ep: ep, wq: wq, stop: make(chan struct{})}
	l.Bound = bound
	return l, nil
}

// Dial implements stream.Dialer: the connection is made on a goroutine, which
// then calls done.
func (n *Network) Dial(local netip.Addr, remote netip.AddrPort, done func(stream.Conn, error)) (cancel func()) {
	return connbase.DialAsync(func(ctx context.Context) (stream.Conn, error) {
		c, err := n.DialContext(ctx, local, remote)
		if err != nil {
			return nil, err
		}
		return c, nil
	}, done)
}

// DialContext connects from local (zero: chosen by netstack) to remote,
// blocking until the connection is established, the dial timeout passes
// (stream.ErrTimeout), the peer refuses (stream.ErrRefused) or ctx ends
// (stream.ErrCanceled).
func (n *Network) DialContext(ctx context.Context, local netip.Addr, remote netip.AddrPort) (*Conn, error) {
	remote = stream.UnmapPort(remote)
	wq := new(waiter.Queue)
	ep, terr := n.s.NewEndpoint(tcp.ProtocolNumber, netstackProtocol(remote.Addr()), wq)
	if terr != nil {
		return nil, fmt.Errorf("netstack: dial %v: %w", remote, netstackErr(terr))
	}
	ep.SocketOptions().SetDelayOption(false)
	// Registered before Connect so that the outcome cannot be missed.
	entry, notify := waiter.NewChannelEntry(waiter.WritableEvents | waiter.EventHUp | waiter.EventErr)
	wq.EventRegister(&entry)
	defer wq.EventUnregister(&entry)
	fail := func(err error) (*Conn, error) {
		ep.Close()
		return nil, fmt.Errorf("netstack: dial %v: %w", remote, err)
	}
	if local.IsValid() {
		if terr := ep.Bind(n.fullAddress(netip.AddrPortFrom(local.Unmap(), 0), false)); terr != nil {
			return fail(netstackErr(terr))
		}
	}
	terr = ep.Connect(n.fullAddress(remote, true))
	if _, ok := terr.(*tcpip.ErrConnectStarted); ok {
		timer := time.NewTimer(n.cfg.DialTimeout)
		defer timer.Stop()
		for netstackConnecting(ep) {
			select {
			case <-ctx.Done():
				return fail(fmt.Errorf("%w: %w", stream.ErrCanceled, ctx.Err()))
			case <-timer.C:
				return fail(fmt.Errorf("%w: no answer within %v", stream.ErrTimeout, n.cfg.DialTimeout))
			case <-notify:
			}
		}
		// The handshake is over: LastError says how it ended.
		terr = ep.LastError()
	}
	if terr != nil {
		return fail(netstackErr(terr))
	}
	if st := tcp.EndpointState(ep.State()); st == tcp.StateError || st == tcp.StateClose {
		// Broken right after the handshake, with the reason already taken.
		return fail(fmt.Errorf("%w: netstack endpoint %v", stream.ErrReset, st))
	}
	return newConn(n, ep, wq, true), nil
}

// netstackConnecting reports whether a TCP endpoint's handshake is under
// way.
func netstackConnecting(ep tcpip.Endpoint) bool {
	switch tcp.EndpointState(ep.State()) {
	case tcp.StateInitial, tcp.StateConnecting, tcp.StateSynSent, tcp.StateSynRecv:
		return true
	}
	return false
}

// fullAddress converts an address for netstack: the zero or unspecified
// address is netstack's "any". A remote address names the NIC so that the
// route is looked up there.
func (n *Network) fullAddress(ap netip.AddrPort, remote bool) tcpip.FullAddress {
	fa := tcpip.FullAddress{Port: ap.Port()}
	if a := ap.Addr().Unmap(); a.IsValid() && !a.IsUnspecified() {
		fa.Addr = tcpip.AddrFromSlice(a.AsSlice())
	}
	if remote {
		fa.NIC = n.nic
	}
	return fa
}

// netstackProtocol is the network protocol of an endpoint for an address:
// IPv6 (dual-stack) for the zero Addr.
func netstackProtocol(a netip.Addr) tcpip.NetworkProtocolNumber {
	if a.Unmap().Is4() {
		return ipv4.ProtocolNumber
	}
	return ipv6.ProtocolNumber
}

// netstackAddrPort converts a netstack address back (IPv4 unmapped).
func netstackAddrPort(fa tcpip.FullAddress) netip.AddrPort {
	a, _ := netip.AddrFromSlice(fa.Addr.AsSlice())
	return netip.AddrPortFrom(a.Unmap(), fa.Port)
}

// netstackErr wraps a netstack error in package stream's.
func netstackErr(e tcpip.Error) error {
	switch e.(type) {
	case *tcpip.ErrConnectionReset:
		return fmt.Errorf("%w: netstack: %s", stream.ErrReset, e)
	case *tcpip.ErrConnectionRefused:
		return fmt.Errorf("%w: netstack: %s", stream.ErrRefused, e)
	case *tcpip.ErrTimeout:
		return fmt.Errorf("%w: netstack: %s", stream.ErrTimeout, e)
	case *tcpip.ErrPortInUse, *tcpip.ErrDuplicateAddress:
		return fmt.Errorf("%w: netstack: %s", stream.ErrAddrInUse, e)
	case *tcpip.ErrAborted, *tcpip.ErrConnectionAborted:
		// The local stack aborted the connection (it is closing).
		return fmt.Errorf("%w: netstack: %s", stream.ErrAborted, e)
	}
	return fmt.Errorf("netstack: %s", e)
}

// Listener is a listening netstack endpoint. It implements
// Listener: an accept goroutine, started by the first SetAcceptor, calls
// the acceptor with each connection.
type Listener struct {
	listenerBase
	n    *Network
	ep   tcpip.Endpoint
	wq   *waiter.Queue
	stop chan struct{} // closed by Close: ends the accept goroutine
}

var _ stream.Listener = (*Listener)(nil)

// SetAcceptor implements stream.Listener. A connection accepted while the
// acceptor is nil is reset.
func (l *Listener) SetAcceptor(onConn func(stream.Conn)) {
	l.InstallAcceptor(onConn, l.acceptLoop)
}

// Close implements stream.Listener: netstack resets the connections still in
// the backlog. It does not wait for the accept goroutine (Close may be called
// from the acceptor).
func (l *Listener) Close() error {
	return l.CloseOnce(func() error {
		close(l.stop)
		l.ep.Close()
		return nil
	})
}

func (l *Listener) acceptLoop() {
	entry, notify := waiter.NewChannelEntry(waiter.ReadableEvents | waiter.EventHUp | waiter.EventErr)
	l.wq.EventRegister(&entry)
	defer l.wq.EventUnregister(&entry)
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		ep, wq, terr := l.ep.Accept(nil)
		if terr != nil {
			if _, ok := terr.(*tcpip.ErrWouldBlock); !ok {
				return // the listener is closed
			}
			select {
			case <-notify:
			case <-l.stop:
				return
			}
			continue
		}
		ep.SocketOptions().SetDelayOption(false)
		c := newConn(l.n, ep, wq, false)
		l.Hand(c)
	}
}

// Conn is a netstack TCP connection. It implements Conn; see the
// file comment for its goroutines.
type Conn struct {
	connBase
	ep              tcpip.Endpoint
	wq              *waiter.Queue
	stop            chan struct{}  // closed when the endpoint is released
	recs, spareRecs []queuedRecord // how queue divides into records; the writer's spare (under mu)
	fastRR          recordReader   // Write's and WriteRecords' reader (under mu)
	writerRR        recordReader   // the writer goroutine's reader
	segPayload      int            // SegmentPayload
	gsoLimit        int            // the largest TCP payload netstack sends as one GSO segment; 0 without GSO
	linger          *time.Timer
}

var (
	_ stream.Conn         = (*Conn)(nil)
	_ stream.RecordWriter = (*Conn)(nil)
)

// queuedRecord is one record of Conn.queue.
type queuedRecord struct {
	end   int  // offset in the queue just past the record
	whole bool // from WriteRecords: offered whole; else (Write) any prefix may go
}

func newConn(n *Network, ep tcpip.Endpoint, wq *waiter.Queue, active bool) *Conn {
	c := &Conn{ep: ep, wq: wq, stop: make(chan struct{})}
	c.Init(n.cfg, active)
	if a, err := ep.GetLocalAddress(); err == nil {
		c.Local = netstackAddrPort(a)
	}
	if a, err := ep.GetRemoteAddress(); err == nil {
		c.Remote = netstackAddrPort(a)
	}
	c.segPayload, c.gsoLimit = n.segmentPayload(ep, c.Local, c.Remote)
	return c
}

// segmentPayload computes what netstack's sender uses as its segment
// payload (MaxPayloadSize, which it does not export): the route's MTU less
// the TCP header and the largest options it sends (timestamps and SACK
// blocks, as the endpoint's maxOptionSize counts them). The peer's MSS
// caps it too, and netstack does not expose it: it is taken to be no
// smaller than ours, as on one Ethernet it is.
//
// gsoLimit is, when the route segments (host or gVisor GSO), the largest
// payload netstack's sender puts in one super-segment (sendData's limit:
// the GSO maximum less the largest TCP/IP header, less one), which the
// GSO then cuts every segment payload bytes from its start; 0 without
// GSO.
func (n *Network) segmentPayload(ep tcpip.Endpoint, local, remote netip.AddrPort) (payload, gsoLimit int) {
	if !local.IsValid() || !remote.IsValid() {
		return 0, 0
	}
	proto := netstackProtocol(remote.Addr())
	r, terr := n.s.FindRoute(n.nic, tcpip.AddrFromSlice(local.Addr().AsSlice()),
		tcpip.AddrFromSlice(remote.Addr().AsSlice()), proto, false)
	if terr != nil {
		return 0, 0
	}
	defer r.Release()
	payload = max(int(r.MTU())-header.TCPMinimumSize-tcpOptionRoom(ep), 0)
	if r.HasHostGSOCapability() || r.HasGVisorGSOCapability() {
		gsoLimit = max(int(r.GSOMaxSize())-header.TCPTotalHeaderMaximumSize-1, 0)
	}
	return payload, gsoLimit
}

// tcpOptionRoom is the most TCP option bytes a connected endpoint puts in
// a data segment: NOP, NOP, timestamps when negotiated, then NOP, NOP and
// as many SACK blocks as fit when SACK is permitted (tcp's makeOptions).
func tcpOptionRoom(ep tcpip.Endpoint) int {
	te, ok := ep.(*tcp.Endpoint)
	if !ok {
		return header.TCPOptionsMaximumSize
	}
	te.LockUser()
	ts, sack := te.SendTSOk, te.SACKPermitted
	te.UnlockUser()
	room := 0
	if ts {
		room += 2 + header.TCPOptionTSLength
	}
	if sack {
		free := header.TCPOptionsMaximumSize - room - 2
		if blocks := min((free-2)/8, header.TCPMaxSACKBlocks); blocks > 0 {
			room += 2 + 2 + 8*blocks
		}
	}
	return room
}

// recordReader is the tcpip.Payloader the endpoint copies one record (or
// Write's bytes) from. Offered whole, it refuses the copy (errRecordRefused,
// which netstack reports as ErrBadBuffer with nothing queued) when netstack
// asks for fewer bytes than the record: see the file comment.
type recordReader struct {
	b       []byte
	whole   bool
	refused bool
}

// errRecordRefused: the record does not fit the endpoint's send buffer.
var errRecordRefused = errors.New("netstack: record does not fit the send buffer")

func (r *recordReader) reset(b []byte, whole bool) { r.b, r.whole, r.refused = b, whole, false }

// Len implements tcpip.Payloader.
func (r *recordReader) Len() int { return len(r.b) }

// Read implements io.Reader.
func (r *recordReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if r.whole && len(p) < len(r.b) {
		r.refused = true
		return 0, errRecordRefused
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// offer writes b into the endpoint, whole when whole is set (see the file
// comment): it returns how many bytes the endpoint took, and the
// endpoint's error, stream.ErrWouldBlock for a refused record.
func (c *Conn) offer(r *recordReader, b []byte, whole bool) (int, tcpip.Error) {
	whole = whole && len(b) <= c.wholeLimit()
	r.reset(b, whole)
	n, terr := c.ep.Write(r, tcpip.WriteOptions{Atomic: whole})
	if r.refused {
		return 0, &tcpip.ErrWouldBlock{}
	}
	return int(n), terr
}

// batch chooses the records offered together in one endpoint Write (see
// the file comment), from the one starting at start: rec(i) is the end of
// the i-th of the n records that follow and whether it goes whole. It
// returns how many and where the last of them ends. A batch is a run of
// whole records of exactly sp bytes, closed by the first shorter one, at
// most limit bytes; any other record goes alone.
func batch(start, n, sp, limit int, rec func(i int) (end int, whole bool)) (k, end int) {
	end = start
	for k < n {
		e, whole := rec(k)
		size := e - end
		if k > 0 && (!whole || size > sp || e-start > limit) {
			break
		}
		k, end = k+1, e
		if !whole || size != sp {
			break
		}
	}
	return k, end
}

// batchLimit is the most bytes one batch of records may hold: what
// netstack's sender sends as one GSO segment (so that its cuts, every
// SegmentPayload bytes from the batch's first byte, fall on record
// bounds), and no more than a record offered whole may be. It is 0 when
// the segment payload is unknown: records then go one by one.
func (c *Conn) batchLimit() int {
	if c.segPayload <= 0 || c.gsoLimit <= 0 {
		return 0
	}
	return min(c.wholeLimit(), c.gsoLimit)
}

// offerBatch offers b, a batch of whole records whose first is first
// bytes long; when the endpoint has no room for the batch, it offers the
// first record alone, as records went before batches (the rest waits for
// room). It returns how many bytes the endpoint took.
func (c *Conn) offerBatch(r *recordReader, b []byte, first int) (int, tcpip.Error) {
	n, terr := c.offer(r, b, true)
	if _, full := terr.(*tcpip.ErrWouldBlock); full && n == 0 && first < len(b) {
		return c.offer(r, b[:first], true)
	}
	return n, terr
}

// wholeLimit is the largest record offered whole: one that netstack copies
// in one chunk and that fits once the send buffer has drained to half.
func (c *Conn) wholeLimit() int {
	return min(buffer.MaxChunkSize, int(c.ep.SocketOptions().GetSendBufferSize())/2)
}

// SegmentPayload implements stream.RecordWriter.
func (c *Conn) SegmentPayload() int { return c.segPayload }

// SetReceiver implements stream.Conn. The first call starts the reader
// goroutine.
func (c *Conn) SetReceiver(onData func(p []byte), onClose func(err error)) {
	c.InstallReceiver(onData, onClose, c.readLoop)
}

// Write implements stream.Conn.
func (c *Conn) Write(b []byte) (int, error) {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.Werr == nil && len(b) == 0 {
		return 0, nil
	}
	total := len(b)
	buffered, err := c.AdmitLocked(len(b))
	if err != nil {
		return 0, err
	}
	if buffered == 0 {
		// Nothing ahead of b: offer it to the endpoint, which takes what
		// fits in its send buffer without waiting.
		n, terr := c.offer(&c.fastRR, b, false)
		b = b[n:]
		if c.offerFailedLocked(terr) {
			return 0, c.Werr
		}
		if len(b) == 0 {
			return total, nil
		}
	}
	c.enqueueLocked(b, false)
	c.StartWriterLocked(c.writeLoop)
	c.Signal()
	return total, nil
}

// WriteRecords implements stream.RecordWriter: each record is offered to the
// endpoint whole, in order; what is not taken at once waits for the writer
// goroutine, record bounds and all.
func (c *Conn) WriteRecords(b []byte, ends []int) (int, error) {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.Werr != nil {
		return 0, c.Werr
	}
	if len(b) == 0 && len(ends) == 0 {
		return 0, nil
	}
	if !validRecords(ends, len(b)) {
		return 0, fmt.Errorf("%w: %d ends for %d bytes", stream.ErrBadRecords, len(ends), len(b))
	}
	buffered, err := c.AdmitLocked(len(b))
	if err != nil {
		return 0, err
	}
	start, taken := 0, 0 // the next record's first byte; bytes of it the endpoint took
	if buffered == 0 {
	offers:
		for len(ends) > 0 {
			k, end := batch(start, len(ends), c.segPayload, c.batchLimit(), func(i int) (int, bool) { return ends[i], true })
			n, terr := c.offerBatch(&c.fastRR, b[start:end], ends[0]-start)
			if c.offerFailedLocked(terr) {
				return 0, c.Werr
			}
			switch start + n {
			case end:
				start, ends = end, ends[k:]
			case ends[0]: // the batch did not fit; its first record did
				start, ends = ends[0], ends[1:]
			default:
				// The endpoint is full (or broken), or took a prefix of a
				// record too large to be offered whole: the writer goes on.
				taken = n
				break offers
			}
		}
		if len(ends) == 0 {
			return len(b), nil
		}
	}
	if taken > 0 {
		// The endpoint took part of a record too large to be offered
		// whole: the rest goes on as plain bytes.
		c.enqueueLocked(b[start+taken:ends[0]], false)
		start, ends = ends[0], ends[1:]
	}
	for _, e := range ends {
		c.enqueueLocked(b[start:e], true)
		start = e
	}
	c.StartWriterLocked(c.writeLoop)
	c.Signal()
	return len(b), nil
}

// enqueueLocked appends b to the writer's queue as one record (whole) or as
// plain bytes, which join plain bytes before them.
func (c *Conn) enqueueLocked(b []byte, whole bool) {
	c.Queue = append(c.Queue, b...)
	if n := len(c.recs); !whole && n > 0 && !c.recs[n-1].whole {
		c.recs[n-1].end = len(c.Queue)
		return
	}
	c.recs = append(c.recs, queuedRecord{end: len(c.Queue), whole: whole})
}

// offerFailedLocked handles the error of a Write or WriteRecords offer:
// true when the connection is now known broken.
func (c *Conn) offerFailedLocked(terr tcpip.Error) bool {
	switch terr.(type) {
	case nil, *tcpip.ErrWouldBlock:
	case *tcpip.ErrConnectionReset, *tcpip.ErrTimeout, *tcpip.ErrAborted, *tcpip.ErrConnectionAborted:
		c.failLocked(netstackErr(terr))
		return true
	default:
		// A bare "closed": the reason went to the reader, or comes later;
		// the writer goroutine settles it (brokenCause), as it may wait and
		// Write may not.
	}
	return false
}

// Close implements stream.Conn.
func (c *Conn) Close() error {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if !c.BeginCloseLocked() {
		return nil
	}
	if c.Cfg.Linger > 0 {
		c.linger = time.AfterFunc(c.Cfg.Linger, c.lingerExpired)
	}
	c.FinishCloseLocked(c.finLocked, c.writeLoop)
	return nil
}

// Abort implements stream.Conn.
func (c *Conn) Abort() error {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.Cause != nil || c.Released {
		return nil
	}
	c.Werr = stream.ErrClosed
	c.Cause = stream.ErrAborted
	c.Queue, c.recs = nil, nil
	c.ep.Abort() // RST
	c.releaseLocked()
	return nil
}

// lingerExpired ends a closed connection whose peer has not closed in
// time (stream.TCPConfig.Linger).
func (c *Conn) lingerExpired() {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.Released {
		return
	}
	c.failLocked(fmt.Errorf("%w: the peer did not close within %v", stream.ErrTimeout, c.Cfg.Linger))
}

// failLocked records the connection's death and resets and releases the
// endpoint, which ends the reader and the writer.
func (c *Conn) failLocked(err error) {
	if c.Cause != nil {
		return
	}
	c.Cause = err
	if c.Werr == nil {
		c.Werr = err
	}
	c.Queue, c.recs = nil, nil
	if !c.Released {
		c.ep.Abort()
	}
	c.releaseLocked()
}

// releaseLocked closes the endpoint and wakes the goroutines.
func (c *Conn) releaseLocked() {
	if c.Released {
		return
	}
	c.Released = true
	if c.linger != nil {
		c.linger.Stop()
	}
	c.ep.Close()
	close(c.stop)
}

// maybeReleaseLocked closes the endpoint once both directions are over.
func (c *Conn) maybeReleaseLocked() {
	if c.BothDoneLocked() {
		c.releaseLocked()
	}
}

// finLocked sends the FIN after the bytes the endpoint holds. If the
// connection is already broken there is nothing to do: the reader reports
// why.
func (c *Conn) finLocked() {
	c.ep.Shutdown(tcpip.ShutdownWrite)
	c.WriterDone = true
	c.maybeReleaseLocked()
}

// brokenCause returns why the endpoint broke when a Read or Write returned
// only a bare "closed" (see the file comment): the reason if netstack
// still holds it, else the one another goroutine records within
// brokenSettle, else stream.ErrReset. It is called without c.Mu.
func (c *Conn) brokenCause() error {
	if terr := c.ep.LastError(); terr != nil {
		return netstackErr(terr)
	}
	t := time.NewTimer(brokenSettle)
	defer t.Stop()
	select {
	case <-c.stop:
		c.Mu.Lock()
		defer c.Mu.Unlock()
		if c.Cause != nil {
			return c.Cause
		}
	case <-t.C:
	}
	return fmt.Errorf("%w: netstack endpoint closed", stream.ErrReset)
}

// broken reports whether a netstack endpoint is in its error state.
func broken(ep tcpip.Endpoint) bool {
	st := tcp.EndpointState(ep.State())
	return st == tcp.StateError
}

func (c *Conn) writeLoop() {
	entry, notify := waiter.NewChannelEntry(waiter.WritableEvents | waiter.EventHUp | waiter.EventErr)
	c.wq.EventRegister(&entry)
	defer c.wq.EventUnregister(&entry)
	for {
		c.Mu.Lock()
		if c.Cause != nil || c.Released {
			c.WriterDone = true
			c.Mu.Unlock()
			return
		}
		if len(c.Queue) == 0 {
			if c.Closing {
				c.finLocked()
				c.Mu.Unlock()
				return
			}
			c.Mu.Unlock()
			select {
			case <-c.Wake:
			case <-c.stop:
			}
			continue
		}
		buf, recs := c.Queue, c.recs
		c.Queue, c.Spare = c.Spare[:0], nil
		c.recs, c.spareRecs = c.spareRecs[:0], nil
		c.Writing = len(buf)
		c.Mu.Unlock()

		var err error
		start, off := 0, 0 // the current record's first byte; the next byte to offer
		for i := 0; i < len(recs) && err == nil; {
			// Records go whole, in batches when they may, or wait; plain
			// bytes (and the rest of a record too large to go whole) in
			// any pieces.
			var n int
			var terr tcpip.Error
			if recs[i].whole && off == start {
				_, end := batch(start, len(recs)-i, c.segPayload, c.batchLimit(), func(j int) (int, bool) { return recs[i+j].end, recs[i+j].whole })
				n, terr = c.offerBatch(&c.writerRR, buf[start:end], recs[i].end-start)
			} else {
				n, terr = c.offer(&c.writerRR, buf[off:recs[i].end], false)
			}
			off += n
			for i < len(recs) && recs[i].end <= off {
				start = recs[i].end
				i++
			}
			switch terr.(type) {
			case nil:
			case *tcpip.ErrWouldBlock:
				select {
				case <-notify:
				case <-c.stop:
					err = stream.ErrClosed // released: the cause is recorded
				}
			case *tcpip.ErrConnectionReset, *tcpip.ErrTimeout, *tcpip.ErrAborted, *tcpip.ErrConnectionAborted:
				err = netstackErr(terr)
			default:
				err = c.brokenCause()
			}
			if n > 0 {
				c.progress(n)
			}
		}

		c.Mu.Lock()
		c.Writing = 0
		if cap(buf) <= 2*c.Cfg.SendBuffer {
			c.Spare, c.spareRecs = buf[:0], recs[:0]
		}
		if err != nil {
			c.failLocked(err)
		}
		c.Mu.Unlock()
	}
}

// progress accounts for n bytes the endpoint took from the writer and
// calls the writable callback when a refused Write may now succeed.
func (c *Conn) progress(n int) {
	c.Mu.Lock()
	c.Writing -= n
	notify := c.WritableLocked(len(c.Queue) + c.Writing)
	c.Mu.Unlock()
	if notify {
		c.NotifyWritable()
	}
}

func (c *Conn) readLoop() {
	entry, notify := waiter.NewChannelEntry(waiter.ReadableEvents | waiter.EventHUp | waiter.EventErr)
	c.wq.EventRegister(&entry)
	defer c.wq.EventUnregister(&entry)
	buf := make([]byte, c.Cfg.ReadBuffer)
	var w tcpip.SliceWriter
	for {
		w = buf
		res, terr := c.ep.Read(&w, tcpip.ReadOptions{})
		if n := res.Count; n > 0 {
			c.ep.ModerateRecvBuf(n)
			c.Deliver(buf[:n])
		}
		var reason error
		switch terr.(type) {
		case nil:
			continue
		case *tcpip.ErrWouldBlock:
			select {
			case <-notify:
				continue
			case <-c.stop:
				reason = c.readEnded(stream.ErrClosed)
			}
		case *tcpip.ErrClosedForReceive:
			if broken(c.ep) {
				reason = c.readEnded(c.brokenCause())
			} else {
				reason = c.readEnded(io.EOF)
			}
		case *tcpip.ErrNotConnected:
			reason = c.readEnded(c.brokenCause())
		default:
			reason = c.readEnded(netstackErr(terr))
		}
		c.NotifyClosed(reason)
		return
	}
}

// readEnded settles why reading stopped and tears down what must go.
func (c *Conn) readEnded(err error) error {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	c.ReaderDone = true
	if c.Cause != nil {
		return c.Cause // local Abort, a failed write, linger, a reason recorded first
	}
	if errors.Is(err, io.EOF) {
		c.maybeReleaseLocked()
		return io.EOF
	}
	c.failLocked(err)
	return err
}

// validRecords reports whether ends partition n bytes into records:
// strictly rising, positive, the last one n.
func validRecords(ends []int, n int) bool {
	prev := 0
	for _, e := range ends {
		if e <= prev {
			return false
		}
		prev = e
	}
	return prev == n
}
