// The part of a connection kernel TCP (kerneltcp.Conn) and netstack
// (netstack.Conn) share: addresses, the callbacks and the lock that
// serialises them, the bounded send queue with its refusal and writable
// signal, and the flags that say which goroutine is done. Each type keeps
// what touches its own socket or endpoint.

package connbase

import (
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/transport/stream"
)

// Conn is embedded in kerneltcp.Conn and netstack.Conn. Its exported
// fields are guarded by Mu and belong to the embedding connection.
type Conn struct {
	Cfg           stream.TCPConfig
	Local, Remote netip.AddrPort
	active        bool
	onData        atomic.Pointer[func([]byte)]
	onClose       atomic.Pointer[func(error)]
	onWritable    atomic.Pointer[func()]
	cbMu          sync.Mutex    // serialises the callbacks
	Wake          chan struct{} // wakes the writer: bytes queued, Close
	Mu            sync.Mutex
	Queue, Spare  []byte // bytes waiting for the writer; the writer's spare buffer
	Writing       int    // bytes the writer holds that the socket has not taken yet
	blocked       bool   // a Write was refused since the last writable callback
	Closing       bool   // Close was called: FIN after the queue
	Werr          error  // what Write returns (stream.ErrClosed after Close or Abort)
	Cause         error  // why the connection died (nil while alive)
	readerStarted bool
	ReaderDone    bool
	writerStarted bool
	WriterDone    bool // FIN sent, or the writer gave up
	Released      bool // the socket or endpoint is closed
}

// Init prepares a connection with its configuration (defaults applied)
// and whether it dialed.
func (c *Conn) Init(cfg stream.TCPConfig, active bool) {
	c.Cfg, c.active = cfg, active
	c.Wake = make(chan struct{}, 1)
}

// LocalAddr implements stream.Conn.
func (c *Conn) LocalAddr() netip.AddrPort { return c.Local }

// RemoteAddr implements stream.Conn.
func (c *Conn) RemoteAddr() netip.AddrPort { return c.Remote }

// Active implements stream.Conn.
func (c *Conn) Active() bool { return c.active }

// SetWritable implements stream.Conn. The function runs on the writer
// goroutine.
func (c *Conn) SetWritable(f func()) { c.onWritable.Store(&f) }

// Buffered implements stream.Conn: bytes queued or held by the writer
// that the socket has not taken yet.
func (c *Conn) Buffered() int {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return len(c.Queue) + c.Writing
}

// InstallReceiver stores the callbacks (for the SetReceiver of the
// embedding connection); the first call starts readLoop.
func (c *Conn) InstallReceiver(onData func(p []byte), onClose func(err error), readLoop func()) {
	c.onData.Store(&onData)
	c.onClose.Store(&onClose)
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.readerStarted {
		return
	}
	c.readerStarted = true
	go readLoop()
}

// AdmitLocked decides whether n more bytes may be written: the error Write
// returns, or stream.ErrWouldBlock when the queue is full. It returns what is
// buffered ahead of them.
func (c *Conn) AdmitLocked(n int) (buffered int, err error) {
	if c.Werr != nil {
		return 0, c.Werr
	}
	buffered = len(c.Queue) + c.Writing
	if stream.MustRefuse(buffered, n, c.Cfg.SendBuffer) {
		c.blocked = true
		return 0, stream.ErrWouldBlock
	}
	return buffered, nil
}

// BeginCloseLocked starts an orderly close: false if the connection is
// already closing or dead.
func (c *Conn) BeginCloseLocked() bool {
	if c.Closing || c.Cause != nil || c.Released {
		return false
	}
	c.Closing = true
	c.Werr = stream.ErrClosed
	return true
}

// FinishCloseLocked sends the FIN with fin now when nothing is queued and
// no writer runs; otherwise writeLoop starts (if it has not) and sends it
// after the queue.
func (c *Conn) FinishCloseLocked(fin, writeLoop func()) {
	if len(c.Queue) == 0 && c.Writing == 0 && !c.writerStarted {
		c.writerStarted = true
		fin()
		return
	}
	c.StartWriterLocked(writeLoop)
	c.Signal()
}

// Signal wakes the writer.
func (c *Conn) Signal() {
	select {
	case c.Wake <- struct{}{}:
	default:
	}
}

// StartWriterLocked starts writeLoop unless it has been started.
func (c *Conn) StartWriterLocked(writeLoop func()) {
	if !c.writerStarted {
		c.writerStarted = true
		go writeLoop()
	}
}

// BothDoneLocked says both directions are over: the socket may go.
func (c *Conn) BothDoneLocked() bool {
	return c.WriterDone && (c.ReaderDone || !c.readerStarted)
}

// WritableLocked reports whether a refused Write may now succeed (the
// queue has drained to half), clearing the refusal when it may.
func (c *Conn) WritableLocked(held int) bool {
	notify := c.blocked && c.Cause == nil && held <= c.Cfg.SendBuffer/2
	if notify {
		c.blocked = false
	}
	return notify
}

// NotifyWritable calls the writable callback.
func (c *Conn) NotifyWritable() {
	c.cbMu.Lock()
	if f := c.onWritable.Load(); f != nil && *f != nil {
		(*f)()
	}
	c.cbMu.Unlock()
}

// Deliver hands received bytes to onData unless the connection has died.
func (c *Conn) Deliver(b []byte) {
	c.Mu.Lock()
	dead := c.Cause != nil
	c.Mu.Unlock()
	if dead {
		return
	}
	c.cbMu.Lock()
	if f := c.onData.Load(); f != nil && *f != nil {
		(*f)(b)
	}
	c.cbMu.Unlock()
}

// NotifyClosed calls onClose with why reading ended.
func (c *Conn) NotifyClosed(reason error) {
	c.cbMu.Lock()
	if f := c.onClose.Load(); f != nil && *f != nil {
		(*f)(reason)
	}
	c.cbMu.Unlock()
}
