// The connection to rnicd: opening a device, the round trips of control
// requests, the background reader, the delivery of replies to their calls
// and of events to their handlers (who reads the socket: leader.go), and
// the end of the connection.

package client

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// ErrDaemonGone is wrapped by every error after the daemon went away.
var ErrDaemonGone = errors.New("rnicd: daemon gone")

// ErrLimit is wrapped by errors of a per-client limit of the daemon.
var ErrLimit = proto.ErrLimit

func init() {
	ibv.Register(ibv.BackendDaemon, func(s ibv.Spec) (ibv.Device, error) {
		d, err := Open(s)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return d.WithCapabilities(), nil
	})
}

// Device is a NIC served by rnicd. It implements ibv.Device and
// ibv.Counters.
type Device struct {
	spec  ibv.Spec
	conn  *net.UnixConn
	name  string
	attr  verbs.DeviceAttr
	port  verbs.PortAttr
	gids  []netip.Addr
	bell  *sessionBell // the session doorbell
	arena *arena       // the ring chunks
	comp  *cqChannel   // the completion channel of every CQ, from the first (arena.mu)

	wmu sync.Mutex // serialises writes to conn

	waiters   sync.Pool    // *waiter (leader.go)
	followers []*waiter    // calls waiting for the token (d.mu)
	nfollow   atomic.Int32 // len(followers)

	mu      sync.Mutex
	seq     uint32
	pending map[uint32]chan reply
	qps     map[uint32]*QP
	cqs     map[uint32]*CQ
	srqs    map[uint32]*SRQ
	buffers []*buffer

	keys sync.RWMutex
	mrs  map[uint32]*MR               // by lkey, for inline gathers
	ahs  map[*verbs.AddressVector]*AH // by AV(), for UD WQEs

	events   chan ibv.Event
	overflow atomic.Uint64 // events dropped because events was full
	gone     chan struct{} // closed when the connection ends
	isGone   atomic.Bool   // gone is closed, for the data path
	goneErr  error
	closed   atomic.Bool
	readDone chan struct{}

	spin bool            // poll for replies: the daemon is another process (leader.go)
	raw  syscall.RawConn // conn's, for reads without its read lock
	tok  readToken       // who reads the socket (leader.go)
	rbuf []byte          // the token holder's
	roob []byte
	riov unix.Iovec  // rbuf, for recvmsg
	rhdr unix.Msghdr // recvmsg's

	hangMu    sync.Mutex
	hungUp    bool  // the stream ended: the background reader ends
	hangCause error // why: nil at the end of the stream

	naps napPool // PostRecv's waits (recvwait.go)
}

var (
	_ ibv.Device   = (*Device)(nil)
	_ ibv.Counters = (*Device)(nil)
)

type reply struct {
	h    proto.Header
	body []byte
	fds  []int
	err  error // the reply arrived but cannot be used
}

// Open connects to the rnicd at spec.Socket and opens the device
// spec.Name.
func Open(spec ibv.Spec) (*Device, error) {
	if spec.Socket == "" {
		spec.Socket = ibv.DefaultSocketPath()
	}
	conn, daemon, err := dial(spec.Socket)
	if err != nil {
		return nil, err
	}
	d := &Device{spec: spec, conn: conn, spin: proto.PollsFor(daemon.Pid), pending: make(map[uint32]chan reply),
		qps: make(map[uint32]*QP), cqs: make(map[uint32]*CQ), srqs: make(map[uint32]*SRQ),
		mrs: make(map[uint32]*MR), ahs: make(map[*verbs.AddressVector]*AH),
		events: make(chan ibv.Event, verbs.DefaultEventQueueLen), gone: make(chan struct{}), readDone: make(chan struct{}),
		arena: newArena(), rbuf: make([]byte, proto.MaxMessage), roob: make([]byte, unix.CmsgSpace(proto.MaxFDs*4))}
	d.riov.Base = &d.rbuf[0]
	d.riov.SetLen(len(d.rbuf))
	if d.raw, err = conn.SyscallConn(); err != nil {
		conn.Close()
		return nil, err
	}
	go d.read()
	var rep proto.OpenReply
	fds, err := d.call(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: spec.Name}, nil, &rep)
	if err == nil {
		d.bell, err = openBell(fds)
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	d.name, d.attr, d.port, d.gids = rep.Name, rep.Attr, rep.Port, rep.GIDs
	return d, nil
}

// goneError returns the error verbs fail with once the connection ended,
// or nil.
func (d *Device) goneError() error {
	select {
	case <-d.gone:
		return d.goneErr
	default:
		return nil
	}
}

// call sends a request with fds and waits for its reply, decoded into
// resp. It returns the descriptors of the reply, which the caller owns.
func (d *Device) call(op proto.Op, req proto.Message, fds []int, resp proto.Message) ([]int, error) {
	if err := d.goneError(); err != nil {
		return nil, err
	}
	w := d.getWaiter()
	d.mu.Lock()
	d.seq++
	seq := d.seq
	d.pending[seq] = w.ch
	d.mu.Unlock()
	w.msg = proto.AppendMessage(w.msg[:0], proto.Header{Op: op, Kind: proto.KindRequest, Seq: seq, NFDs: uint8(len(fds))}, req)
	w.fds = fds
	err := d.start(w)
	var r reply
	if err == nil {
		r, err = d.await(w)
	}
	d.unfollow(w)
	d.mu.Lock()
	delete(d.pending, seq)
	d.mu.Unlock()
	d.putWaiter(w)
	if err != nil {
		return nil, err
	}
	if r.err != nil {
		return nil, fmt.Errorf("rnicd: %v: %w", op, r.err)
	}
	if r.h.Status != proto.StatusOK {
		closeFDs(r.fds)
		rd := proto.NewReader(r.body)
		msg := rd.String(proto.MaxErrorLen)
		return nil, proto.ErrorOf(op, r.h.Status, msg)
	}
	rd := proto.NewReader(r.body)
	resp.Decode(rd)
	if err := rd.Done(); err != nil {
		closeFDs(r.fds)
		return nil, fmt.Errorf("rnicd: %v reply: %w", op, err)
	}
	return r.fds, nil
}

// await returns the reply to w's request.
// A follower woken to lead (passOn) reads the socket for it meanwhile.
func (d *Device) await(w *waiter) (reply, error) {
	for {
		select {
		case r := <-w.ch:
			return r, nil
		case <-w.lead:
			d.leadAgain(w)
		case <-d.gone:
			// The reader may have delivered just before it ended.
			select {
			case r := <-w.ch:
				return r, nil
			default:
				return reply{}, d.goneErr
			}
		}
	}
}

// notice sends a request that gets no reply.
func (d *Device) notice(msg []byte) {
	if d.goneError() == nil {
		d.write(msg, nil)
	}
}

func (d *Device) write(msg []byte, fds []int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	d.wmu.Lock()
	_, _, err := d.conn.WriteMsgUnix(msg, oob, nil)
	d.wmu.Unlock()
	if err != nil {
		if gerr := d.goneError(); gerr != nil {
			return gerr
		}
		return fmt.Errorf("rnicd %s: %w: %w", d.spec.Socket, ErrDaemonGone, err)
	}
	return nil
}

// read receives the messages that arrive while no call leads (leader.go)
// until the connection ends.
func (d *Device) read() {
	defer close(d.readDone)
	err := d.raw.Read(func(fd uintptr) bool {
		for d.tok.takeOrMiss() {
			n, oobn, flags, err := d.recv(int(fd))
			more := err == unix.EAGAIN || d.deliver(n, oobn, flags, err)
			d.tok.release()
			if err == unix.EAGAIN || !more {
				return !more
			}
		}
		return false // a caller leads: it reads what woke this reader
	})
	d.hangUp(err)
	d.hangMu.Lock()
	cause := d.hangCause
	d.hangMu.Unlock()
	if d.closed.Load() {
		d.goneErr = fmt.Errorf("rnicd device %s: %w", d.spec, verbs.ErrClosed)
	} else if cause != nil {
		d.goneErr = fmt.Errorf("rnicd %s: %w: %v", d.spec.Socket, ErrDaemonGone, cause)
	} else {
		d.goneErr = fmt.Errorf("rnicd %s: %w", d.spec.Socket, ErrDaemonGone)
	}
	close(d.gone)
	d.isGone.Store(true)
	close(d.events)
	d.retireAll()
}

// hangUp notes, the first time, that the stream ended (cause nil) or
// failed, and ends the background reader, which may be parked while a
// caller read the end: a read deadline in the past wakes it. (A close
// would wait for every use of the socket to end, a caller's and the
// reader's own included.)
func (d *Device) hangUp(cause error) {
	d.hangMu.Lock()
	defer d.hangMu.Unlock()
	if !d.hungUp {
		d.hungUp, d.hangCause = true, cause
		d.conn.SetReadDeadline(time.Unix(1, 0))
	}
}

// deliver handles the message recv read: a reply goes to its call, an
// event to its handler. It returns false when the stream ended or failed
// (the connection is hung up then). The caller holds the token.
func (d *Device) deliver(n, oobn, flags int, err error) bool {
	fds := parseRights(d.roob[:oobn])
	if err != nil || (n == 0 && oobn == 0) {
		closeFDs(fds)
		d.hangUp(err)
		return false
	}
	h, body, err := proto.DecodeMessage(d.rbuf[:n], len(fds))
	if err != nil {
		closeFDs(fds)
		d.failReply(h, badReply(err, flags))
		return true
	}
	switch h.Kind {
	case proto.KindReply:
		d.hand(h.Seq, reply{h: h, body: append([]byte(nil), body...), fds: fds})
	case proto.KindEvent:
		closeFDs(fds)
		d.event(h, body)
	default:
		closeFDs(fds)
	}
	return true
}

// badReply explains a reply that arrived but failed to decode. A reply
// whose descriptors the kernel dropped (MSG_CTRUNC: this process was at its
// descriptor limit when they arrived) says so, since raising RLIMIT_NOFILE
// is the cure.
func badReply(err error, flags int) error {
	if flags&unix.MSG_CTRUNC != 0 {
		return fmt.Errorf("the reply's descriptors were lost, this process is out of file descriptors (RLIMIT_NOFILE): %w", err)
	}
	return fmt.Errorf("unreadable reply: %w", err)
}

// failReply hands err to the call waiting for the reply h, if h is one and
// a call waits for it: the call fails instead of waiting forever. Anything
// else that does not decode is dropped.
func (d *Device) failReply(h proto.Header, err error) {
	if h.Kind != proto.KindReply {
		return
	}
	d.hand(h.Seq, reply{h: h, err: err})
}

// hand gives r to the call waiting for the reply seq. A reply no call
// waits for, or a second reply to a call (a daemon's error), is dropped.
// The send is under d.mu, so that a call that took its channel off
// pending knows that nothing is sent to it after.
func (d *Device) hand(seq uint32, r reply) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ch, ok := d.pending[seq]; ok {
		select {
		case ch <- r:
			return
		default:
		}
	}
	closeFDs(r.fds)
}

// retireAll ends the client side of every object: the daemon has reaped
// them (or is gone). Rings stay mapped until Destroy or Close; buffers
// stay the program's.
func (d *Device) retireAll() {
	d.mu.Lock()
	cqs, qps, srqs := d.cqs, d.qps, d.srqs
	d.mu.Unlock()
	for _, q := range qps {
		q.retire()
	}
	for _, s := range srqs {
		s.retire()
	}
	for _, c := range cqs {
		c.retire()
	}
	d.keys.RLock()
	mrs := make([]*MR, 0, len(d.mrs))
	for _, m := range d.mrs {
		mrs = append(mrs, m)
	}
	d.keys.RUnlock()
	for _, m := range mrs {
		m.release()
	}
}

// releaseAll unmaps the rings of every object (Close).
func (d *Device) releaseAll() {
	d.mu.Lock()
	cqs, qps, srqs := d.cqs, d.qps, d.srqs
	d.cqs, d.qps, d.srqs = map[uint32]*CQ{}, map[uint32]*QP{}, map[uint32]*SRQ{}
	d.mu.Unlock()
	for _, q := range qps {
		q.release()
	}
	for _, s := range srqs {
		s.release()
	}
	for _, c := range cqs {
		c.release()
	}
	if d.bell != nil {
		d.bell.close() // every QP and SRQ is retired: none rings it
	}
	d.arena.mu.Lock()
	comp := d.comp
	d.arena.mu.Unlock()
	if comp != nil {
		comp.close() // every CQ is released: none is on it
	}
	d.arena.close() // every object is released: no ring is in use
}

func parseRights(oob []byte) []int {
	if len(oob) == 0 {
		return nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if f, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// mapRing maps a ring memfd the daemon sent and closes it: the mapping
// stays, with no descriptor held for it.
func mapRing(fd int, size uint64) (*memory.Shared, error) {
	defer unix.Close(fd)
	if size > 1<<40 {
		return nil, fmt.Errorf("rnicd: ring of %d bytes: %w", size, proto.ErrMalformed)
	}
	mem, err := memory.MapShared(fd, int(size))
	if err != nil {
		return nil, err
	}
	// The mapping is all the client needs: a descriptor per ring would
	// spend the process's limit (one per QP and CQ).
	mem.CloseFd()
	return mem, nil
}

// Close closes the connection: the daemon frees every object of this
// device, and the client side of them is released.
func (d *Device) Close() error {
	if d.closed.Swap(true) {
		return fmt.Errorf("rnicd device %s: close: %w", d.spec, verbs.ErrClosed)
	}
	d.conn.Close()
	<-d.readDone
	d.releaseAll()
	d.naps.close()
	return nil
}
