// A session: one client connection, its peer credentials, the objects it
// owns, the loop that serves its requests and the reaper that frees what
// it leaves behind.

package server

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/transport/poll"
)

// eventQueueLen is how many events wait for a client that is slow to read
// them; more are dropped and counted, as a NIC's event queue does.
const eventQueueLen = 256

// Session is one client connection.
type Session struct {
	srv  *Server
	conn *net.UnixConn
	id   uint64
	cred unix.Ucred
	comm string // /proc/PID/comm at connect
	spin bool   // poll for requests: the client is another process (readspin.go)
	poll poll.Poller

	dev   *device      // set by OPEN
	bell  *sessionBell // set by OPEN
	arena *arena       // set by OPEN

	mu      sync.RWMutex
	next    uint32
	objs    map[uint32]object
	qps     int
	mrs     int
	mrBytes uint64
	ring    uint64
	objects int // PDs, CQs, SRQs, AHs
	onClose []func()

	wmu  sync.Mutex // serialises writes to conn
	wbuf []byte

	tenant *tenant      // the socket it came on
	counts clientCounts // what it made the daemon do (rnic stat)

	events chan []byte
	dead   atomic.Bool
	done   chan struct{}

	complaints atomic.Int32 // client errors logged so far
}

// maxComplaints is how many client errors a session logs: a broken or
// hostile client must not flood the daemon's log (Stats counts them all).
const maxComplaints = 8

func newSession(srv *Server, t *tenant, c *net.UnixConn) *Session {
	s := &Session{srv: srv, tenant: t, conn: c, id: srv.nextID.Add(1), objs: make(map[uint32]object),
		events: make(chan []byte, eventQueueLen), done: make(chan struct{})}
	if raw, err := c.SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) {
			if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
				s.cred = *cred
			}
		})
	}
	s.comm = readComm(s.cred.Pid)
	s.spin = proto.PollsFor(s.cred.Pid)
	return s
}

// ID returns the session's number, unique in the server.
func (s *Session) ID() uint64 { return s.id }

// Cred returns the client's credentials (SO_PEERCRED at connect).
func (s *Session) Cred() unix.Ucred { return s.cred }

// Server returns the session's server.
func (s *Session) Server() *Server { return s.srv }

// OnClose registers f to run when the session is reaped, before its verbs
// objects are freed (in reverse order of registration).
func (s *Session) OnClose(f func()) {
	s.mu.Lock()
	s.onClose = append(s.onClose, f)
	s.mu.Unlock()
}

func (s *Session) logf(format string, args ...any) {
	s.srv.logf("client %d (pid %d uid %d): "+format, append([]any{s.id, s.cred.Pid, s.cred.Uid}, args...)...)
}

// complain logs a client error, up to maxComplaints per session.
func (s *Session) complain(format string, args ...any) {
	switch n := s.complaints.Add(1); {
	case n <= maxComplaints:
		s.logf(format, args...)
	case n == maxComplaints+1:
		s.logf("more client errors; no longer logged")
	}
}

func (s *Session) info() Client {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := Client{ID: s.id, PID: s.cred.Pid, UID: s.cred.Uid, GID: s.cred.Gid, Comm: s.comm, Tenant: s.tenant.name,
		QPs: s.qps, MRs: s.mrs, Objects: s.objects, MRBytes: s.mrBytes, Counts: s.counts.load()}
	if s.dev != nil {
		c.Device = s.dev.dev.Name()
	}
	return c
}

// serve reads and answers requests until the connection ends, then reaps.
func (s *Session) serve() {
	s.logf("connected")
	go s.writeEvents()
	buf := make([]byte, proto.MaxMessage)
	oob := make([]byte, unix.CmsgSpace(proto.MaxFDs*4))
	for {
		r := s.readRequest(buf, oob)
		n, oobn, flags := r.N, r.OOBN, r.Flags
		fds, ferr := parseRights(oob[:oobn])
		if r.Err != nil || (n == 0 && oobn == 0) {
			closeFDs(fds)
			break
		}
		var bad error
		switch {
		case ferr != nil:
			bad = fmt.Errorf("%w: descriptors: %v", proto.ErrMalformed, ferr)
		case flags&unix.MSG_TRUNC != 0:
			bad = fmt.Errorf("%w: message longer than %d bytes", proto.ErrMalformed, proto.MaxMessage)
		case flags&unix.MSG_CTRUNC != 0:
			bad = fmt.Errorf("%w: more than %d descriptors", proto.ErrMalformed, proto.MaxFDs)
		default:
			s.handle(buf[:n], fds) // closes fds
			continue
		}
		closeFDs(fds)
		s.badMessage(buf[:n], bad)
	}
	s.reap()
}

// parseRights returns the descriptors of SCM_RIGHTS messages in oob.
func parseRights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	var bad error
	for i := range msgs {
		f, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			bad = err
			continue
		}
		fds = append(fds, f...)
	}
	return fds, bad
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// badMessage counts a malformed message and, if it looks like a request,
// answers it with the error.
func (s *Session) badMessage(msg []byte, err error) {
	s.srv.stats.badMessages.Add(1)
	s.counts.clientErrors.Add(1)
	s.complain("bad message: %v", err)
	if len(msg) >= proto.HeaderLen && proto.Kind(msg[2]) == proto.KindRequest {
		var h proto.Header
		h.Op = proto.Op(le16(msg))
		h.Seq = le32(msg[4:])
		s.reply(h, nil, err)
	}
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// handle serves one message and closes the descriptors that came with it
// (before answering: the client may count them).
func (s *Session) handle(msg []byte, fds []int) {
	h, body, err := proto.DecodeMessage(msg, len(fds))
	if err != nil {
		closeFDs(fds)
		s.badMessage(msg, err)
		return
	}
	if h.Kind != proto.KindRequest && h.Kind != proto.KindNotice {
		closeFDs(fds)
		s.badMessage(msg, fmt.Errorf("%w: a client sent a %v", proto.ErrMalformed, h.Kind))
		return
	}
	var rep Reply
	err = s.call(h, body, fds, &rep)
	closeFDs(fds)
	s.counts.requests.Add(1)
	if err != nil {
		s.counts.requestErrors.Add(1)
	}
	if errors.Is(err, proto.ErrMalformed) {
		s.srv.stats.badMessages.Add(1)
		s.counts.clientErrors.Add(1)
		s.complain("bad %v: %v", h.Op, err)
	}
	if errors.Is(err, proto.ErrLimit) {
		s.srv.stats.limitRejections.Add(1)
		s.counts.limitRejects.Add(1)
	}
	if h.Kind == proto.KindRequest {
		s.reply(h, &rep, err)
	}
	for _, f := range rep.after {
		f()
	}
}

func (s *Session) call(h proto.Header, body []byte, fds []int, rep *Reply) error {
	hd := handlerOf(h.Op)
	if hd == nil {
		return fmt.Errorf("%w: op %v", errUnknownOp, h.Op)
	}
	// Administration (rnic stat) concerns the daemon, not a device; a
	// host port names its device itself.
	if s.dev == nil && h.Op != proto.OpOpen && h.Op&0xff00 != proto.OpRangeAdmin && h.Op&0xff00 != proto.OpRangeHostPort {
		return fmt.Errorf("%w: %v before OPEN", proto.ErrNoDevice, h.Op)
	}
	return hd(s, &Request{Op: h.Op, body: body, FDs: fds}, rep)
}

// errUnknownOp wraps nic's ErrNotSupported through StatusUnknownOp.
var errUnknownOp = errors.New("unknown op")

// reply sends the reply to request h.
func (s *Session) reply(h proto.Header, rep *Reply, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var fds []int
	if err != nil {
		st := proto.StatusOf(err)
		if errors.Is(err, errUnknownOp) {
			st = proto.StatusUnknownOp
		}
		s.wbuf = proto.AppendError(s.wbuf[:0], h.Op, h.Seq, st, err.Error())
	} else {
		var body proto.Message
		if rep != nil {
			body, fds = rep.msg, rep.fds
		}
		s.wbuf = proto.AppendMessage(s.wbuf[:0], proto.Header{Op: h.Op, Kind: proto.KindReply, Seq: h.Seq, NFDs: uint8(len(fds))}, body)
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	// A failed write means the client is gone; the read loop sees it.
	s.conn.WriteMsgUnix(s.wbuf, oob, nil)
}

// SendEvent queues an event message for the client; it never blocks. It
// returns false if the event was dropped (the client does not read, or is
// gone).
func (s *Session) SendEvent(op proto.Op, body proto.Message) bool {
	if s.dead.Load() {
		return false
	}
	msg := proto.AppendMessage(nil, proto.Header{Op: op, Kind: proto.KindEvent}, body)
	select {
	case s.events <- msg:
		s.counts.eventsSent.Add(1)
		return true
	default:
		s.srv.stats.eventsDropped.Add(1)
		s.counts.eventsDropped.Add(1)
		return false
	}
}

// writeEvents writes queued events until the session ends.
func (s *Session) writeEvents() {
	for {
		select {
		case msg := <-s.events:
			s.wmu.Lock()
			s.conn.Write(msg)
			s.wmu.Unlock()
		case <-s.done:
			return
		}
	}
}

// reap frees everything the client left: QPs first (they hold CQs, SRQs
// and PDs), then SRQs, CQs, AHs, MWs (before the MRs they are bound to),
// MRs and PDs.
func (s *Session) reap() {
	s.dead.Store(true)
	close(s.done)
	s.conn.Close()
	s.mu.Lock()
	hooks := s.onClose
	s.onClose = nil
	s.mu.Unlock()
	for i := len(hooks) - 1; i >= 0; i-- {
		hooks[i]()
	}
	st := &s.srv.stats
	left := false // an object that would not go still uses its rings
	for _, kind := range []objKind{kindQP, kindSRQ, kindCQ, kindChannel, kindAH, kindMW, kindMR, kindPD} {
		for _, o := range s.objectsOf(kind) {
			if err := o.destroy(s, true); err != nil {
				s.logf("reaping %v %d: %v", kind, o.handle(), err)
				left = true
				continue
			}
			s.remove(o)
			switch kind {
			case kindQP:
				st.reapedQPs.Add(1)
			case kindSRQ:
				st.reapedSRQs.Add(1)
			case kindCQ:
				st.reapedCQs.Add(1)
			case kindAH:
				st.reapedAHs.Add(1)
			case kindMR:
				st.reapedMRs.Add(1)
			case kindPD:
				st.reapedPDs.Add(1)
			}
		}
	}
	if s.bell != nil {
		s.bell.close()
	}
	if s.arena != nil && !left {
		s.arena.close()
	}
	if s.dev != nil {
		s.dev.detach(s)
	}
	st.clientsReaped.Add(1)
	s.logf("gone; reaped")
}
