// Kernel TCP: the iWARP stream of the embedded mode (DESIGN.md "Modes").
//
// A TCPConn wraps a net.TCPConn (TCP_NODELAY on) in the event-driven Conn
// contract:
//
//   - Receiving: a reader goroutine, started by the first SetReceiver (so
//     bytes that arrive earlier wait in the kernel's receive buffer), reads
//     into one reused buffer of TCPConfig.ReadBuffer bytes and hands each
//     read to onData; the read that fails ends the loop with onClose.
//   - Sending: Write copies into a queue bounded by TCPConfig.SendBuffer
//     and never waits for the socket. When nothing is queued it first tries
//     a non-blocking write straight into the socket (the common case: no
//     goroutine hand-off on the latency path); whatever the socket does not
//     take at once is queued for a writer goroutine, started on first need,
//     which blocks in the socket's write for the engine.
//
// Why a bounded queue with ErrWouldBlock rather than a Write that blocks
// (with or without a timeout): the engine calls Write with its lock held,
// and its receive callback takes the same lock. If Write blocked on a full
// socket, the engine's reader would stop draining the peer, the peer's
// engine would block in its own Write the same way, and two NICs streaming
// at each other would deadlock until a timeout broke the connection. With a
// refusal the engine keeps receiving, stops generating FPDUs, and resumes
// on the writable callback, which is how siw treats a full socket.

package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// Defaults for TCPConfig fields left zero.
const (
	DefaultReadBuffer  = 64 << 10
	DefaultLinger      = 30 * time.Second
	DefaultDialTimeout = 10 * time.Second
)

// TCPConfig configures kernel TCP connections. The zero value uses the
// defaults.
type TCPConfig struct {
	// SendBuffer bounds the bytes Write queues (see "Backpressure" in the
	// package comment); 0 means DefaultSendBuffer.
	SendBuffer int
	// ReadBuffer is the size of each connection's reused read buffer, the
	// largest chunk onData gets; 0 means DefaultReadBuffer.
	ReadBuffer int
	// Linger bounds how long a closed connection waits for its queued
	// bytes to leave and for the peer's FIN; when it runs out the
	// connection is reset and onClose gets ErrTimeout. 0 means
	// DefaultLinger, a negative value waits forever.
	Linger time.Duration
	// DialTimeout bounds Dial; 0 means DefaultDialTimeout.
	DialTimeout time.Duration
}

func (c TCPConfig) withDefaults() TCPConfig {
	c.SendBuffer = sendBufferOr(c.SendBuffer)
	if c.ReadBuffer <= 0 {
		c.ReadBuffer = DefaultReadBuffer
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	return c
}

// TCP is the host's TCP stack as a Network. The zero value is ready to use.
type TCP struct {
	Config TCPConfig
}

var _ Network = (*TCP)(nil)

// Listen starts listening with the default configuration; see TCP.Listen.
func Listen(addr netip.AddrPort) (*TCPListener, error) {
	return (&TCP{}).ListenTCP(addr)
}

// Dial connects with the default configuration and the given timeout
// (0: DefaultDialTimeout), blocking until the connection is established or
// has failed; see TCP.DialContext.
func Dial(local netip.Addr, remote netip.AddrPort, timeout time.Duration) (*TCPConn, error) {
	n := &TCP{Config: TCPConfig{DialTimeout: timeout}}
	return n.DialContext(context.Background(), local, remote)
}

// Listen implements Network.
func (n *TCP) Listen(addr netip.AddrPort) (Listener, error) {
	l, err := n.ListenTCP(addr)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// ListenTCP listens on addr (port 0: a free port, see Addr). No
// connection is accepted before SetAcceptor.
func (n *TCP) ListenTCP(addr netip.AddrPort) (*TCPListener, error) {
	addr = unmapPort(addr)
	l, err := net.ListenTCP(network(addr.Addr()), net.TCPAddrFromAddrPort(addr))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			err = fmt.Errorf("%w: %w", ErrAddrInUse, err)
		}
		return nil, err
	}
	tl := &TCPListener{l: l, cfg: n.Config.withDefaults()}
	tl.addr = tcpAddrPort(l.Addr())
	return tl, nil
}

// Dial implements Dialer: the connection is made on a goroutine, which
// then calls done.
func (n *TCP) Dial(local netip.Addr, remote netip.AddrPort, done func(Conn, error)) (cancel func()) {
	return dialAsync(func(ctx context.Context) (Conn, error) {
		c, err := n.DialContext(ctx, local, remote)
		if err != nil {
			return nil, err
		}
		return c, nil
	}, done)
}

// DialContext connects from local (zero: chosen by the kernel) to remote,
// blocking until the connection is established, the dial timeout passes
// (ErrTimeout), the peer refuses (ErrRefused) or ctx ends.
func (n *TCP) DialContext(ctx context.Context, local netip.Addr, remote netip.AddrPort) (*TCPConn, error) {
	cfg := n.Config.withDefaults()
	remote = unmapPort(remote)
	d := net.Dialer{Timeout: cfg.DialTimeout}
	if local.IsValid() {
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(local.Unmap(), 0))
	}
	c, err := d.DialContext(ctx, network(remote.Addr()), remote.String())
	if err != nil {
		var ne net.Error
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			err = fmt.Errorf("%w: %w", ErrRefused, err)
		case errors.Is(err, context.Canceled):
			err = fmt.Errorf("%w: %w", ErrCanceled, err)
		case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
			err = fmt.Errorf("%w: %w", ErrTimeout, err)
		default:
			err = mapErr(err)
		}
		return nil, err
	}
	return newTCPConn(c.(*net.TCPConn), cfg, true)
}

// network is the net package's network name for an address family.
func network(a netip.Addr) string {
	if a.Unmap().Is4() {
		return "tcp4"
	}
	return "tcp6"
}

func unmapPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

func tcpAddrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		return unmapPort(ta.AddrPort())
	}
	return netip.AddrPort{}
}

// TCPListener is a kernel TCP listening socket. It implements Listener: an
// accept goroutine, started by the first SetAcceptor, calls the acceptor
// with each connection.
type TCPListener struct {
	listenerBase
	l   *net.TCPListener
	cfg TCPConfig
}

var _ Listener = (*TCPListener)(nil)

// SetAcceptor implements Listener. A connection accepted while the
// acceptor is nil is reset.
func (l *TCPListener) SetAcceptor(onConn func(Conn)) {
	l.setAcceptor(onConn, l.acceptLoop)
}

// Close implements Listener. It does not wait for the accept goroutine,
// which ends at once (Close may be called from the acceptor).
func (l *TCPListener) Close() error { return l.closeOnce(l.l.Close) }

func (l *TCPListener) acceptLoop() {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.l.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || !isTemporaryAccept(err) {
				return
			}
			// Out of file descriptors and the like: wait, as net/http does.
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		conn, err := newTCPConn(c, l.cfg, false)
		if err != nil {
			continue
		}
		l.hand(conn)
	}
}

// isTemporaryAccept reports accept errors worth retrying.
func isTemporaryAccept(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EINTR)
}

// TCPConn is a kernel TCP connection. It implements Conn; see the file
// comment for its goroutines.
type TCPConn struct {
	connBase
	c   *net.TCPConn
	raw syscall.RawConn
}

var _ Conn = (*TCPConn)(nil)

func newTCPConn(c *net.TCPConn, cfg TCPConfig, active bool) (*TCPConn, error) {
	if err := c.SetNoDelay(true); err != nil {
		c.Close()
		return nil, err
	}
	raw, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	tc := &TCPConn{c: c, raw: raw}
	tc.init(cfg, active)
	tc.local, tc.remote = tcpAddrPort(c.LocalAddr()), tcpAddrPort(c.RemoteAddr())
	return tc, nil
}

// SetReceiver implements Conn. The first call starts the reader goroutine.
func (c *TCPConn) SetReceiver(onData func(p []byte), onClose func(err error)) {
	c.setReceiver(onData, onClose, c.readLoop)
}

// Write implements Conn.
func (c *TCPConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.werr == nil && len(b) == 0 {
		return 0, nil
	}
	total := len(b)
	buffered, err := c.admitLocked(len(b))
	if err != nil {
		return 0, err
	}
	if buffered == 0 {
		// Nothing ahead of b: try the socket directly, without waiting.
		n, err := writeNow(c.raw, b)
		if err != nil {
			c.failLocked(mapErr(err))
			return 0, c.werr
		}
		b = b[n:]
		if len(b) == 0 {
			return total, nil
		}
	}
	c.queue = append(c.queue, b...)
	c.startWriterLocked(c.writeLoop)
	c.signal()
	return total, nil
}

// Close implements Conn.
func (c *TCPConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.beginCloseLocked() {
		return nil
	}
	if c.cfg.Linger > 0 {
		c.c.SetDeadline(time.Now().Add(c.cfg.Linger))
	}
	c.finishCloseLocked(c.finLocked, c.writeLoop)
	return nil
}

// Abort implements Conn.
func (c *TCPConn) Abort() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause != nil || c.released {
		return nil
	}
	c.werr = ErrClosed
	c.cause = ErrAborted
	c.queue = nil
	c.c.SetLinger(0) // close sends RST
	c.releaseLocked()
	c.signal()
	return nil
}

// failLocked records the connection's death and closes the socket (with
// RST), which ends the reader and the writer.
func (c *TCPConn) failLocked(err error) {
	if c.cause != nil {
		return
	}
	c.cause = err
	if c.werr == nil {
		c.werr = err
	}
	c.queue = nil
	if !c.released {
		c.c.SetLinger(0)
	}
	c.releaseLocked()
	c.signal()
}

func (c *TCPConn) releaseLocked() {
	if !c.released {
		c.released = true
		c.c.Close()
	}
}

// maybeReleaseLocked closes the socket once both directions are over.
func (c *TCPConn) maybeReleaseLocked() {
	if c.bothDoneLocked() {
		c.releaseLocked()
	}
}

// finLocked sends the FIN (everything queued has been written).
func (c *TCPConn) finLocked() {
	if err := c.c.CloseWrite(); err != nil {
		c.failLocked(mapErr(err))
	}
	c.writerDone = true
	c.maybeReleaseLocked()
}

func (c *TCPConn) writeLoop() {
	for {
		c.mu.Lock()
		if c.cause != nil {
			c.writerDone = true
			c.mu.Unlock()
			return
		}
		if len(c.queue) == 0 {
			if c.closing {
				c.finLocked()
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			<-c.wake
			continue
		}
		buf := c.queue
		c.queue, c.spare = c.spare[:0], nil
		c.writing = len(buf)
		c.mu.Unlock()

		_, err := c.c.Write(buf)

		c.mu.Lock()
		c.writing = 0
		if cap(buf) <= 2*c.cfg.SendBuffer {
			c.spare = buf[:0]
		}
		if err != nil {
			c.failLocked(mapErr(err))
		}
		notify := c.writableLocked(len(c.queue))
		c.mu.Unlock()
		if notify {
			c.notifyWritable()
		}
	}
}

func (c *TCPConn) readLoop() {
	buf := make([]byte, c.cfg.ReadBuffer)
	for {
		n, err := c.c.Read(buf)
		if n > 0 {
			c.deliver(buf[:n])
		}
		if err != nil {
			c.notifyClosed(c.readEnded(err))
			return
		}
	}
}

// readEnded settles why reading stopped and tears down what must go.
func (c *TCPConn) readEnded(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readerDone = true
	if c.cause != nil {
		return c.cause // local Abort, a failed write, a timeout
	}
	if errors.Is(err, io.EOF) {
		c.maybeReleaseLocked()
		return io.EOF
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%w: the peer did not close within %v", ErrTimeout, c.cfg.Linger)
	} else {
		err = mapErr(err)
	}
	c.failLocked(err)
	return err
}

// mapErr wraps kernel errors in this package's.
func mapErr(err error) error {
	switch {
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("%w: %w", ErrReset, err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}
