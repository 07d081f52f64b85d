// The client of FuzzSocket: a program of a fuzz input's bytes played on a
// real connection to the daemon. It speaks the protocol by hand, as a
// hostile local process would: requests valid and broken, descriptors of
// every kind, bytes written into its rings and doorbell, indices
// scribbled on, its end closed in the middle of a request.

package server_test

import (
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// replyWait is how long a request may wait for its reply before the daemon
// counts as stuck: generous, for a busy machine.
const replyWait = 10 * time.Second

// program is a fuzz input read as a sequence of steps; past its end it
// reads zeros.
type program struct{ b []byte }

func (p *program) done() bool { return len(p.b) == 0 }

func (p *program) byte() byte {
	if len(p.b) == 0 {
		return 0
	}
	v := p.b[0]
	p.b = p.b[1:]
	return v
}

func (p *program) u32() uint32 {
	var b [4]byte
	copy(b[:], p.bytes(4))
	return binary.LittleEndian.Uint32(b[:])
}

func (p *program) bytes(n int) []byte {
	n = min(n, len(p.b))
	v := p.b[:n]
	p.b = p.b[n:]
	return v
}

// ring is a queue's ring memory as the fuzz client sees it.
type ring struct {
	handle uint32
	qpn    uint32 // a QP's number (0 for an SRQ or a CQ)
	work   *proto.WorkRings
	cq     *proto.CQRing
	header []byte
}

// fuzzClient is one session of the fuzz client. Everything it holds
// (descriptors it made or received, mappings) is released by close, so
// that the test process's descriptors count only the daemon's.
type fuzzClient struct {
	t       *testing.T
	conn    *net.UnixConn
	seq     uint32
	fds     []int
	maps    [][]byte
	bell    *proto.SessionBell
	bellFD  int
	chunks  map[uint32][]byte
	rings   []ring
	handles []uint32  // handles seen in replies
	mr      verbs.SGE // a registered buffer: Addr, Length, LKey
	rkey    uint32    // its rkey
	pending []int     // descriptors for the next request
	// avoid are QPNs a QP of the client must not aim at: RoCEv2 lets
	// any host that reaches a QP's port send into its stream, which
	// is the wire's weakness, not the daemon's.
	avoid []uint32
	gone  bool // the daemon ended the session
}

func dialFuzz(t *testing.T, sock string) *fuzzClient {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		t.Fatalf("dial the daemon: %v", err)
	}
	return &fuzzClient{t: t, conn: c, bellFD: -1, chunks: make(map[uint32][]byte)}
}

// close ends the session and releases everything the client holds.
func (c *fuzzClient) close() {
	c.conn.Close()
	for _, fd := range append(c.fds, c.pending...) {
		unix.Close(fd)
	}
	for _, m := range c.maps {
		unix.Munmap(m)
	}
	*c = fuzzClient{t: c.t, gone: true}
}

// send sends msg with the pending descriptors; false once the daemon has
// ended the session.
func (c *fuzzClient) send(msg []byte) bool {
	var oob []byte
	if len(c.pending) > 0 {
		oob = unix.UnixRights(c.pending...)
	}
	_, _, err := c.conn.WriteMsgUnix(msg, oob, nil)
	c.fds = append(c.fds, c.pending...)
	c.pending = nil
	if err != nil {
		c.gone = true
	}
	return err == nil
}

// request sends a request of op with body and waits for its reply.
func (c *fuzzClient) request(op proto.Op, body []byte, nfds int) (proto.Status, []byte, []int) {
	c.seq++
	msg := proto.AppendMessage(nil, proto.Header{Op: op, Kind: proto.KindRequest, Seq: c.seq, NFDs: uint8(nfds)}, nil)
	msg = append(msg, body...)
	binary.LittleEndian.PutUint32(msg[12:], uint32(len(body)))
	if !c.send(msg) {
		return proto.StatusInvalid, nil, nil
	}
	st, rbody, fds := c.await(op, c.seq)
	c.created(op, st, rbody, fds)
	return st, rbody, fds
}

// requestMsg is request of a message body.
func (c *fuzzClient) requestMsg(op proto.Op, m proto.Message) (proto.Status, []byte, []int) {
	w := proto.NewWriter(nil)
	m.Encode(w)
	return c.request(op, w.Bytes(), len(c.pending))
}

// await reads until the reply to seq comes, skipping events and the
// replies of garbage. A daemon that does not answer within replyWait is
// stuck: the test fails.
func (c *fuzzClient) await(op proto.Op, seq uint32) (proto.Status, []byte, []int) {
	buf := make([]byte, proto.MaxMessage)
	oob := make([]byte, unix.CmsgSpace(proto.MaxFDs*4))
	deadline := time.Now().Add(replyWait)
	for {
		c.conn.SetReadDeadline(deadline)
		n, oobn, _, _, err := c.conn.ReadMsgUnix(buf, oob)
		var fds []int
		if oobn > 0 {
			if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
				for i := range msgs {
					f, _ := unix.ParseUnixRights(&msgs[i])
					fds = append(fds, f...)
				}
			}
			c.fds = append(c.fds, fds...)
		}
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			c.t.Fatalf("no reply to %v (seq %d) within %v: the daemon is stuck", op, seq, replyWait)
		case err != nil || n == 0:
			c.gone = true
			return proto.StatusInvalid, nil, nil
		}
		h, body, derr := proto.DecodeMessage(buf[:n], len(fds))
		if derr != nil || h.Kind != proto.KindReply || h.Seq != seq {
			continue
		}
		return h.Status, append([]byte(nil), body...), fds
	}
}

// notice sends a notice (no reply).
func (c *fuzzClient) notice(op proto.Op, m proto.Message) {
	c.send(proto.AppendMessage(nil, proto.Header{Op: op, Kind: proto.KindNotice}, m))
}

// pick returns a handle the client has seen, or (rarely) any number.
func (c *fuzzClient) pick(p *program) uint32 {
	b := p.byte()
	if len(c.handles) == 0 || b >= 250 {
		return uint32(b)
	}
	return c.handles[int(b)%len(c.handles)]
}

// mapFD maps size bytes of fd shared, or returns nil.
func (c *fuzzClient) mapFD(fd int, size uint64) []byte {
	if size == 0 || size > 64<<20 {
		return nil
	}
	m, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	c.maps = append(c.maps, m)
	return m
}

// open sends OPEN and maps the session doorbell of its reply.
func (c *fuzzClient) open(name string) {
	st, _, fds := c.requestMsg(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: name})
	if st != proto.StatusOK || len(fds) != 2 {
		return
	}
	if m := c.mapFD(fds[0], proto.BellAreaLen); m != nil {
		c.bell, _ = proto.NewSessionBell(m)
	}
	c.bellFD = fds[1]
}

// created notes what the reply of a create holds: its handle and, for the
// queues, their rings (mapping the chunk whose descriptor came with it).
func (c *fuzzClient) created(op proto.Op, st proto.Status, body []byte, fds []int) {
	name := op.String()
	if st != proto.StatusOK || len(body) < 4 ||
		!(strings.HasPrefix(name, "CREATE_") || strings.HasPrefix(name, "ALLOC_") || strings.HasPrefix(name, "REG_")) {
		return
	}
	c.handles = append(c.handles, binary.LittleEndian.Uint32(body))
	var place proto.RingPlace
	r := ring{handle: binary.LittleEndian.Uint32(body)}
	var size uint64
	var work *proto.RingLayout
	var cq *proto.CQLayout
	switch op {
	case proto.OpCreateQP:
		var m proto.CreateQPReply
		m.Decode(proto.NewReader(body))
		r.qpn, place, work = m.QPN, m.Place, &m.Ring
	case proto.OpCreateSRQ:
		var m proto.CreateSRQReply
		m.Decode(proto.NewReader(body))
		place, work = m.Place, &m.Ring
	case proto.OpCreateCQOn:
		var m proto.CreateCQOnReply
		m.Decode(proto.NewReader(body))
		place, cq = m.Place, &m.Ring
	default:
		return
	}
	if work != nil {
		size = work.Size()
	} else {
		size = cq.Size()
	}
	if place.Check(size) != nil {
		return
	}
	chunk := c.chunks[place.Chunk]
	if chunk == nil && len(fds) > 0 {
		chunk = c.mapFD(fds[0], place.ChunkLen)
		c.chunks[place.Chunk] = chunk
	}
	if uint64(len(chunk)) < place.Offset+size {
		return
	}
	mem := chunk[place.Offset : place.Offset+size]
	r.header = mem[:proto.RingHeaderLen]
	var err error
	if work != nil {
		r.work, err = proto.NewWorkRings(mem, *work)
	} else {
		r.cq, err = proto.NewCQRing(mem, *cq)
	}
	if err == nil {
		c.rings = append(c.rings, r)
	}
}
