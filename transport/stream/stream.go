// Package stream is the contract of iWARP's byte streams: reliable,
// ordered TCP connections (Conn, RecordWriter), how they are opened
// (Dialer, Listener, Network), the errors they report, and the
// configuration the TCP-backed implementations share (TCPConfig).
//
// The implementations are packages of their own, so that the engine, which
// imports only this contract, links none of them: kerneltcp (the host's
// TCP, the embedded mode), netstack (gVisor's TCP/IP stack on a TAP, the
// TAP mode) and simstream (connections on a virtual clock, the simulated
// mode). streamcap turns a connection's traffic into a Wireshark-ready TCP
// capture.
//
// The iWARP engine (MPA/DDP/RDMAP) sits on Conn and must not know which
// kind it has (nic/README.md, "Layers"). To keep the engine a state machine
// (nic/README.md, principle 1) the contract is event-driven, not blocking:
//
//   - bytes arrive through a callback (SetReceiver), in order, split and
//     coalesced arbitrarily, as TCP does: the engine's MPA parser must cope
//     with an FPDU spread over many chunks or many FPDUs in one chunk;
//   - Write never blocks: it queues, and refuses with ErrWouldBlock when the
//     connection's send buffer is full; the SetWritable callback says when
//     to try again (the model of siw's sk_write_space);
//   - connections are opened with an asynchronous Dial whose outcome is a
//     callback, and accepted through a Listener's acceptor callback, so a
//     connect timeout or refusal is one more event for the connection
//     manager.
//
// # Callback rules (both kinds of Conn)
//
//   - The callbacks of one Conn (onData, onClose, the writable callback)
//     never run concurrently with each other, and never synchronously
//     inside a method of the Conn: an engine may call Write, Close or Abort
//     while holding its own lock, and its callbacks may take that lock and
//     call any method of the Conn.
//   - Kernel TCP runs the callbacks on goroutines the Conn owns (a reader
//     and a writer, serialised by a per-connection mutex); callbacks of
//     different Conns may run in parallel. A simulated Conn runs them inside
//     the virtual clock's event loop (clock.Virtual Run/RunFor/Step).
//   - onClose is called exactly once per Conn once a receiver is installed:
//     io.EOF when the peer closed its side in order (after every byte it
//     sent was delivered), ErrReset when the peer (or, in a simulation, a
//     scripted reset) reset the connection, ErrAborted after a local Abort,
//     or another error on failure. After onClose no onData follows.
//   - Close is a half-close, as siw and TCP's shutdown(SHUT_WR) are: the
//     FIN follows the queued bytes, and bytes from the peer keep arriving
//     until the peer's own FIN (onClose(io.EOF)). A peer that never closes
//     leaves the connection half-open until Abort (kernel TCP also gives up
//     after TCPConfig.Linger).
//
// # Backpressure
//
// Each Conn has a send buffer of SendBuffer bytes (DefaultSendBuffer): the
// bytes accepted by Write that the network has not taken yet (kernel TCP:
// not yet written into the socket; simulation: not yet delivered to the
// peer's receiver). Write is all or nothing: it accepts all of b, or, when
// bytes are already buffered and b would take the total above SendBuffer,
// returns 0, ErrWouldBlock and accepts nothing. A write into an empty
// buffer is always accepted whatever its size, so any FPDU can be sent. Once
// a Write has been refused, the writable callback runs when the buffered
// bytes have fallen to half of SendBuffer. The engine therefore never waits
// inside Write (it may hold its lock there), and a slow peer slows the
// engine down instead of growing memory without bound.
package stream

import (
	"errors"
	"net/netip"
)

// Conn is one reliable, ordered byte stream (a TCP connection). Its
// methods are safe for concurrent use; see the package comment for when
// the callbacks run.
type Conn interface {
	// Write queues a copy of b for sending and returns len(b), nil; the
	// caller may reuse b at once. It never blocks for long. It accepts
	// nothing and returns ErrWouldBlock when the send buffer is full (see
	// "Backpressure"), ErrClosed after Close or Abort, and ErrReset (or the
	// connection's failure) once the connection is broken. Writing zero
	// bytes does nothing.
	Write(b []byte) (int, error)
	// SetReceiver installs the function called with each chunk of bytes
	// that arrived, in order; chunks may be split or coalesced arbitrarily;
	// the slice is valid only during the call. onClose is called once when
	// the peer closes (io.EOF) or the connection ends otherwise (the
	// error). Bytes that arrive before a receiver is installed wait for it
	// (a kernel socket's receive buffer), so install it right after Dial or
	// accept. Calling SetReceiver again replaces both functions. A nil
	// onData discards the bytes; a nil onClose ignores the end.
	SetReceiver(onData func(p []byte), onClose func(err error))
	// SetWritable installs the function called when the send buffer has
	// drained to half after a Write returned ErrWouldBlock.
	SetWritable(f func())
	// Buffered reports how many bytes accepted by Write the network has not
	// taken yet (see "Backpressure").
	Buffered() int
	// Close closes the sending side in order: the FIN follows every queued
	// byte. Receiving goes on until the peer's FIN. Closing twice, or after
	// Abort, does nothing.
	Close() error
	// Abort resets the connection (RST): queued bytes are discarded, the
	// peer sees ErrReset, and onClose gets ErrAborted. Aborting twice does
	// nothing.
	Abort() error
	// LocalAddr and RemoteAddr are the connection's addresses (IPv4
	// addresses unmapped).
	LocalAddr() netip.AddrPort
	RemoteAddr() netip.AddrPort
	// Active reports whether this end opened the connection (dialed and
	// sent the SYN): the MPA initiator. An accepted connection is passive.
	Active() bool
}

// RecordWriter is implemented by a Conn that can keep records whole on the
// wire: MPA's rule that every TCP segment begins with an FPDU (RFC 5044
// §5, §6; siw sizes each FPDU to the socket's MSS and sends it as one
// segment), without the stream knowing what a record is. A Conn that does
// not implement it segments as it likes (kernel TCP: the kernel's
// business). Wrappers such as streamcap's tee hide it; the engine then falls
// back to Write.
type RecordWriter interface {
	// SegmentPayload is the largest TCP payload one segment carries now:
	// the MSS less the TCP options the connection sends; 0 if unknown. A
	// record of at most this size goes out in one segment.
	SegmentPayload() int
	// WriteRecords is Write (all or nothing, the same backpressure,
	// ErrWouldBlock and writable callback, the same errors) for b made of
	// records, the i-th ending at offset ends[i]: ends rise strictly and
	// the last is len(b). The connection never lets a segment begin or end
	// inside a record of at most SegmentPayload bytes (short segments may
	// carry several whole records; a record larger than a segment is cut
	// as TCP likes), save where TCP itself must: a peer window smaller
	// than the record with nothing in flight, or a peer MSS below ours;
	// behind segmentation offload, an implementation may also let
	// records cross segments where its TCP merges queued writes (it says
	// where).
	// Ends that do not partition b are an error (ErrBadRecords) and
	// nothing is written. The caller may reuse b and ends at once.
	WriteRecords(b []byte, ends []int) (int, error)
}

// Dialer opens connections.
type Dialer interface {
	// Dial starts opening a connection from local (the zero Addr lets the
	// network choose) to remote and returns at once. done is called exactly
	// once, never from inside Dial, with the connection or with the reason
	// it could not be opened: ErrRefused (nobody listens; the peer answered
	// with RST), ErrTimeout (no answer within the dialer's timeout),
	// ErrCanceled, or another error. cancel abandons the attempt: if done
	// has not been called yet it will be, with ErrCanceled (and a
	// connection that completed meanwhile is aborted); afterwards cancel
	// does nothing. Install the receiver inside done (or right after).
	Dial(local netip.Addr, remote netip.AddrPort, done func(Conn, error)) (cancel func())
}

// Listener accepts connections on one address.
type Listener interface {
	// SetAcceptor installs the function called with each accepted
	// connection (passive, Active() == false); it should install the
	// connection's receiver before returning. Connections that complete
	// before an acceptor is installed wait for it (the backlog). Calling it
	// again replaces the function; the callbacks run one at a time.
	SetAcceptor(onConn func(Conn))
	// Addr is the address listened on, with the port chosen when the
	// requested one was 0.
	Addr() netip.AddrPort
	// Close stops listening; connections already accepted are not
	// affected. Connections still waiting for an acceptor are reset.
	// Closing twice does nothing.
	Close() error
}

// Network is where connections live: the host's TCP (kerneltcp), a TAP NIC's
// own stack (netstack) or a simulated network (simstream). The iWARP
// connection manager takes a Network, so the same code runs in the embedded
// and the simulated mode.
type Network interface {
	Dialer
	// Listen starts listening on addr (port 0: any free port).
	Listen(addr netip.AddrPort) (Listener, error)
}

// DefaultSendBuffer is the send buffer of a Conn whose configuration leaves
// it zero: several MPA FPDUs' worth at the largest MULPDU, small enough to
// bound the memory of a stalled peer.
const DefaultSendBuffer = 4 << 20

// Errors of this package. Errors wrapping the kernel's carry both: test
// with errors.Is.
var (
	// ErrClosed: Write after Close or Abort; Accept after a Listener's
	// Close.
	ErrClosed = errors.New("stream: connection closed")
	// ErrReset: the peer reset the connection (TCP RST, ECONNRESET).
	ErrReset = errors.New("stream: connection reset by peer")
	// ErrAborted: onClose's reason after the local Abort.
	ErrAborted = errors.New("stream: connection aborted")
	// ErrWouldBlock: Write refused because the send buffer is full.
	ErrWouldBlock = errors.New("stream: send buffer full")
	// ErrRefused: Dial found nobody listening (ECONNREFUSED).
	ErrRefused = errors.New("stream: connection refused")
	// ErrTimeout: Dial got no answer in time, or a closing connection's
	// peer never sent its FIN (kernel TCP's Linger).
	ErrTimeout = errors.New("stream: timed out")
	// ErrCanceled: Dial's cancel was called first.
	ErrCanceled = errors.New("stream: dial canceled")
	// ErrAddrInUse: Listen on an address already listened on.
	ErrAddrInUse = errors.New("stream: address already in use")
	// ErrBadRecords: WriteRecords' ends do not partition its bytes.
	ErrBadRecords = errors.New("stream: record ends do not partition the bytes")
)

// MustRefuse reports whether Write must refuse n more bytes on a
// connection with buffered bytes pending and a send buffer of limit bytes
// (see "Backpressure"): every implementation applies this one rule.
func MustRefuse(buffered, n, limit int) bool {
	return buffered > 0 && buffered+n > limit
}

// UnmapPort returns ap with an IPv4-mapped IPv6 address unmapped: the form
// in which a Conn reports its addresses (LocalAddr, RemoteAddr).
func UnmapPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
