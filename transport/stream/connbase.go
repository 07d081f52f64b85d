// The part of a connection kernel TCP (TCPConn) and netstack
// (NetstackConn) share: addresses, the callbacks and the lock that
// serialises them, the bounded send queue with its refusal and writable
// signal, and the flags that say which goroutine is done. Each type keeps
// what touches its own socket or endpoint.

package stream

import (
	"net/netip"
	"sync"
	"sync/atomic"
)

// connBase is embedded in TCPConn and NetstackConn.
type connBase struct {
	cfg           TCPConfig
	local, remote netip.AddrPort
	active        bool
	onData        atomic.Pointer[func([]byte)]
	onClose       atomic.Pointer[func(error)]
	onWritable    atomic.Pointer[func()]
	cbMu          sync.Mutex    // serialises the callbacks
	wake          chan struct{} // wakes the writer: bytes queued, Close
	mu            sync.Mutex
	queue, spare  []byte // bytes waiting for the writer; the writer's spare buffer
	writing       int    // bytes the writer holds that the socket has not taken yet
	blocked       bool   // a Write was refused since the last writable callback
	closing       bool   // Close was called: FIN after the queue
	werr          error  // what Write returns (ErrClosed after Close or Abort)
	cause         error  // why the connection died (nil while alive)
	readerStarted bool
	readerDone    bool
	writerStarted bool
	writerDone    bool // FIN sent, or the writer gave up
	released      bool // the socket or endpoint is closed
}

func (c *connBase) init(cfg TCPConfig, active bool) {
	c.cfg, c.active = cfg, active
	c.wake = make(chan struct{}, 1)
}

// LocalAddr implements Conn.
func (c *connBase) LocalAddr() netip.AddrPort { return c.local }

// RemoteAddr implements Conn.
func (c *connBase) RemoteAddr() netip.AddrPort { return c.remote }

// Active implements Conn.
func (c *connBase) Active() bool { return c.active }

// SetWritable implements Conn. The function runs on the writer goroutine.
func (c *connBase) SetWritable(f func()) { c.onWritable.Store(&f) }

// Buffered implements Conn: bytes queued or held by the writer that the
// socket has not taken yet.
func (c *connBase) Buffered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue) + c.writing
}

// setReceiver stores the callbacks; the first call starts readLoop.
func (c *connBase) setReceiver(onData func(p []byte), onClose func(err error), readLoop func()) {
	c.onData.Store(&onData)
	c.onClose.Store(&onClose)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readerStarted {
		return
	}
	c.readerStarted = true
	go readLoop()
}

// admitLocked decides whether n more bytes may be written: the error Write
// returns, or ErrWouldBlock when the queue is full. It returns what is
// buffered ahead of them.
func (c *connBase) admitLocked(n int) (buffered int, err error) {
	if c.werr != nil {
		return 0, c.werr
	}
	buffered = len(c.queue) + c.writing
	if refuse(buffered, n, c.cfg.SendBuffer) {
		c.blocked = true
		return 0, ErrWouldBlock
	}
	return buffered, nil
}

// beginCloseLocked starts an orderly close: false if the connection is
// already closing or dead.
func (c *connBase) beginCloseLocked() bool {
	if c.closing || c.cause != nil || c.released {
		return false
	}
	c.closing = true
	c.werr = ErrClosed
	return true
}

// finishCloseLocked sends the FIN with fin now when nothing is queued and
// no writer runs; otherwise writeLoop starts (if it has not) and sends it
// after the queue.
func (c *connBase) finishCloseLocked(fin, writeLoop func()) {
	if len(c.queue) == 0 && c.writing == 0 && !c.writerStarted {
		c.writerStarted = true
		fin()
		return
	}
	c.startWriterLocked(writeLoop)
	c.signal()
}

// signal wakes the writer.
func (c *connBase) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *connBase) startWriterLocked(writeLoop func()) {
	if !c.writerStarted {
		c.writerStarted = true
		go writeLoop()
	}
}

// bothDoneLocked says both directions are over: the socket may go.
func (c *connBase) bothDoneLocked() bool {
	return c.writerDone && (c.readerDone || !c.readerStarted)
}

// writableLocked reports whether a refused Write may now succeed (the
// queue has drained to half), clearing the refusal when it may.
func (c *connBase) writableLocked(held int) bool {
	notify := c.blocked && c.cause == nil && held <= c.cfg.SendBuffer/2
	if notify {
		c.blocked = false
	}
	return notify
}

// notifyWritable calls the writable callback.
func (c *connBase) notifyWritable() {
	c.cbMu.Lock()
	if f := c.onWritable.Load(); f != nil && *f != nil {
		(*f)()
	}
	c.cbMu.Unlock()
}

// deliver hands received bytes to onData unless the connection has died.
func (c *connBase) deliver(b []byte) {
	c.mu.Lock()
	dead := c.cause != nil
	c.mu.Unlock()
	if dead {
		return
	}
	c.cbMu.Lock()
	if f := c.onData.Load(); f != nil && *f != nil {
		(*f)(b)
	}
	c.cbMu.Unlock()
}

// notifyClosed calls onClose with why reading ended.
func (c *connBase) notifyClosed(reason error) {
	c.cbMu.Lock()
	if f := c.onClose.Load(); f != nil && *f != nil {
		(*f)(reason)
	}
	c.cbMu.Unlock()
}
