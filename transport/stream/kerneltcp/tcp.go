// Kernel TCP: the iWARP stream of the embedded mode (nic/README.md, "Modes").
//
// A Conn wraps a net.TCPConn (TCP_NODELAY on) in the event-driven
// stream.Conn contract:
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

package kerneltcp

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

	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/internal/connbase"
)

// The parts of a connection and a listener shared with netstack.
type (
	connBase     = connbase.Conn
	listenerBase = connbase.Listener
)

// Network is the host's TCP stack as a stream.Network. The zero value is
// ready to use.
type Network struct {
	Config stream.TCPConfig
}

var _ stream.Network = (*Network)(nil)

// Listen starts listening with the default configuration; see
// Network.ListenTCP.
func Listen(addr netip.AddrPort) (*Listener, error) {
	return (&Network{}).ListenTCP(addr)
}

// Dial connects with the default configuration and the given timeout
// (0: DefaultDialTimeout), blocking until the connection is established or
// has failed; see Network.DialContext.
func Dial(local netip.Addr, remote netip.AddrPort, timeout time.Duration) (*Conn, error) {
	n := &Network{Config: stream.TCPConfig{DialTimeout: timeout}}
	return n.DialContext(context.Background(), local, remote)
}

// Listen implements stream.Network.
func (n *Network) Listen(addr netip.AddrPort) (stream.Listener, error) {
	l, err := n.ListenTCP(addr)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// ListenTCP listens on addr (port 0: a free port, see Addr). No
// connection is accepted before SetAcceptor.
func (n *Network) ListenTCP(addr netip.AddrPort) (*Listener, error) {
	addr = stream.UnmapPort(addr)
	l, err := net.ListenTCP(network(addr.Addr()), net.TCPAddrFromAddrPort(addr))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			err = fmt.Errorf("%w: %w", stream.ErrAddrInUse, err)
		}
		return nil, err
	}
	tl := &Listener{l: l, cfg: n.Config.WithDefaults()}
	tl.Bound = tcpAddrPort(l.Addr())
	return tl, nil
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

// DialContext connects from local (zero: chosen by the kernel) to remote,
// blocking until the connection is established, the dial timeout passes
// (stream.ErrTimeout), the peer refuses (stream.ErrRefused) or ctx ends.
func (n *Network) DialContext(ctx context.Context, local netip.Addr, remote netip.AddrPort) (*Conn, error) {
	cfg := n.Config.WithDefaults()
	remote = stream.UnmapPort(remote)
	d := net.Dialer{Timeout: cfg.DialTimeout}
	if local.IsValid() {
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(local.Unmap(), 0))
	}
	c, err := d.DialContext(ctx, network(remote.Addr()), remote.String())
	if err != nil {
		var ne net.Error
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			err = fmt.Errorf("%w: %w", stream.ErrRefused, err)
		case errors.Is(err, context.Canceled):
			err = fmt.Errorf("%w: %w", stream.ErrCanceled, err)
		case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
			err = fmt.Errorf("%w: %w", stream.ErrTimeout, err)
		default:
			err = mapErr(err)
		}
		return nil, err
	}
	return newConn(c.(*net.TCPConn), cfg, true)
}

// network is the net package's network name for an address family.
func network(a netip.Addr) string {
	if a.Unmap().Is4() {
		return "tcp4"
	}
	return "tcp6"
}

func tcpAddrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		return stream.UnmapPort(ta.AddrPort())
	}
	return netip.AddrPort{}
}

// Listener is a kernel TCP listening socket. It implements
// stream.Listener: an
// accept goroutine, started by the first SetAcceptor, calls the acceptor
// with each connection.
type Listener struct {
	listenerBase
	l   *net.TCPListener
	cfg stream.TCPConfig
}

var _ stream.Listener = (*Listener)(nil)

// SetAcceptor implements stream.Listener. A connection accepted while the
// acceptor is nil is reset.
func (l *Listener) SetAcceptor(onConn func(stream.Conn)) {
	l.InstallAcceptor(onConn, l.acceptLoop)
}

// Close implements stream.Listener. It does not wait for the accept goroutine,
// which ends at once (Close may be called from the acceptor).
func (l *Listener) Close() error { return l.CloseOnce(l.l.Close) }

func (l *Listener) acceptLoop() {
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
		conn, err := newConn(c, l.cfg, false)
		if err != nil {
			continue
		}
		l.Hand(conn)
	}
}

// isTemporaryAccept reports accept errors worth retrying.
func isTemporaryAccept(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EINTR)
}

// Conn is a kernel TCP connection. It implements stream.Conn; see the file
// comment for its goroutines.
type Conn struct {
	connBase
	c   *net.TCPConn
	raw syscall.RawConn
}

var _ stream.Conn = (*Conn)(nil)

func newConn(c *net.TCPConn, cfg stream.TCPConfig, active bool) (*Conn, error) {
	if err := c.SetNoDelay(true); err != nil {
		c.Close()
		return nil, err
	}
	raw, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	tc := &Conn{c: c, raw: raw}
	tc.Init(cfg, active)
	tc.Local, tc.Remote = tcpAddrPort(c.LocalAddr()), tcpAddrPort(c.RemoteAddr())
	return tc, nil
}

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
		// Nothing ahead of b: try the socket directly, without waiting.
		n, err := writeNow(c.raw, b)
		if err != nil {
			c.failLocked(mapErr(err))
			return 0, c.Werr
		}
		b = b[n:]
		if len(b) == 0 {
			return total, nil
		}
	}
	c.Queue = append(c.Queue, b...)
	c.StartWriterLocked(c.writeLoop)
	c.Signal()
	return total, nil
}

// Close implements stream.Conn.
func (c *Conn) Close() error {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if !c.BeginCloseLocked() {
		return nil
	}
	if c.Cfg.Linger > 0 {
		c.c.SetDeadline(time.Now().Add(c.Cfg.Linger))
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
	c.Queue = nil
	c.c.SetLinger(0) // close sends RST
	c.releaseLocked()
	c.Signal()
	return nil
}

// failLocked records the connection's death and closes the socket (with
// RST), which ends the reader and the writer.
func (c *Conn) failLocked(err error) {
	if c.Cause != nil {
		return
	}
	c.Cause = err
	if c.Werr == nil {
		c.Werr = err
	}
	c.Queue = nil
	if !c.Released {
		c.c.SetLinger(0)
	}
	c.releaseLocked()
	c.Signal()
}

func (c *Conn) releaseLocked() {
	if !c.Released {
		c.Released = true
		c.c.Close()
	}
}

// maybeReleaseLocked closes the socket once both directions are over.
func (c *Conn) maybeReleaseLocked() {
	if c.BothDoneLocked() {
		c.releaseLocked()
	}
}

// finLocked sends the FIN (everything queued has been written).
func (c *Conn) finLocked() {
	if err := c.c.CloseWrite(); err != nil {
		c.failLocked(mapErr(err))
	}
	c.WriterDone = true
	c.maybeReleaseLocked()
}

func (c *Conn) writeLoop() {
	for {
		c.Mu.Lock()
		if c.Cause != nil {
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
			<-c.Wake
			continue
		}
		buf := c.Queue
		c.Queue, c.Spare = c.Spare[:0], nil
		c.Writing = len(buf)
		c.Mu.Unlock()

		_, err := c.c.Write(buf)

		c.Mu.Lock()
		c.Writing = 0
		if cap(buf) <= 2*c.Cfg.SendBuffer {
			c.Spare = buf[:0]
		}
		if err != nil {
			c.failLocked(mapErr(err))
		}
		notify := c.WritableLocked(len(c.Queue))
		c.Mu.Unlock()
		if notify {
			c.NotifyWritable()
		}
	}
}

func (c *Conn) readLoop() {
	buf := make([]byte, c.Cfg.ReadBuffer)
	for {
		n, err := c.c.Read(buf)
		if n > 0 {
			c.Deliver(buf[:n])
		}
		if err != nil {
			c.NotifyClosed(c.readEnded(err))
			return
		}
	}
}

// readEnded settles why reading stopped and tears down what must go.
func (c *Conn) readEnded(err error) error {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	c.ReaderDone = true
	if c.Cause != nil {
		return c.Cause // local Abort, a failed write, a timeout
	}
	if errors.Is(err, io.EOF) {
		c.maybeReleaseLocked()
		return io.EOF
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%w: the peer did not close within %v", stream.ErrTimeout, c.Cfg.Linger)
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
		return fmt.Errorf("%w: %w", stream.ErrReset, err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: %w", stream.ErrTimeout, err)
	}
	return err
}
