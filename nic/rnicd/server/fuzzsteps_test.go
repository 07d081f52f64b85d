// The steps of FuzzSocket's client (fuzzclient_test.go): what a program's
// bytes make it do to the daemon, and play, which reads the program step
// by step.

package server_test

import (
	"encoding/binary"
	"net/netip"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// descriptors makes the descriptors the next request carries: memfds of
// odd sizes, sealed or not, a pipe, /dev/null, a socket, the doorbell.
func (c *fuzzClient) descriptors(p *program) {
	for k := 1 + int(p.byte()%proto.MaxFDs); k > 0 && len(c.pending) < proto.MaxFDs+1; k-- {
		fd := -1
		switch p.byte() % 6 {
		case 0, 1:
			fd = memfd(uint64(p.u32()%(1<<20)), p.byte()%2 == 0)
		case 2:
			var pp [2]int
			if unix.Pipe2(pp[:], unix.O_CLOEXEC) == nil {
				unix.Close(pp[1])
				fd = pp[0]
			}
		case 3:
			fd, _ = unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
		case 4:
			var sp [2]int
			if s, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0); err == nil {
				sp = s
				unix.Close(sp[1])
				fd = sp[0]
			}
		case 5:
			if c.bellFD >= 0 {
				fd, _ = unix.FcntlInt(uintptr(c.bellFD), unix.F_DUPFD_CLOEXEC, 0)
			}
		}
		if fd >= 0 {
			c.pending = append(c.pending, fd)
		}
	}
}

// memfd returns a memfd of size bytes, sealed against shrinking and
// growing if sealed, or -1.
func memfd(size uint64, sealed bool) int {
	fd, err := unix.MemfdCreate("fuzz", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1
	}
	unix.Ftruncate(fd, int64(size))
	if sealed {
		unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW)
	}
	return fd
}

// regMR registers a sealed buffer of a few pages, at fuzzed offsets now
// and then; a registration that works is the one WQEs point at.
func (c *fuzzClient) regMR(p *program) {
	pages := 1 + uint64(p.byte()%4)
	sh, err := memory.NewShared(int(pages * 4096))
	if err != nil {
		return
	}
	defer sh.Close()
	fd, err := unix.FcntlInt(uintptr(sh.Fd()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return
	}
	c.pending = append(c.pending, fd)
	m := proto.RegMRReq{PD: c.pick(p), Access: uint32(memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead),
		FileSize: pages * 4096, Length: pages * 4096, IOVA: 1 << 30}
	if b := p.byte(); b%4 == 0 {
		m.Offset, m.Length, m.FileSize = uint64(p.u32()), uint64(p.u32()), uint64(p.u32())
	}
	st, body, _ := c.requestMsg(proto.OpRegMR, &m)
	if st == proto.StatusOK {
		var rep proto.RegMRReply
		rep.Decode(proto.NewReader(body))
		c.mr = verbs.SGE{Addr: rep.Addr, Length: uint32(rep.Len), LKey: rep.LKey}
		c.rkey = rep.RKey
	}
}

// createCQ creates a CQ of fuzzed size, on a channel now and then.
func (c *fuzzClient) createCQ(p *program) {
	m := proto.CreateCQOnReq{CQE: 1 + uint32(p.byte()%64)}
	if p.byte()%4 == 0 {
		m.Channel = c.pick(p)
	}
	c.requestMsg(proto.OpCreateCQOn, &m)
}

// createQP creates a QP (or an SRQ) of fuzzed type and capacities on
// handles the client has.
func (c *fuzzClient) createQP(p *program) {
	if p.byte()%5 == 0 {
		c.requestMsg(proto.OpCreateSRQ, &proto.CreateSRQReq{PD: c.pick(p), MaxWR: 1 + uint32(p.byte()%32), MaxSGE: 1 + uint32(p.byte()%4)})
		return
	}
	types := []verbs.QPType{verbs.QPTypeRC, verbs.QPTypeUC, verbs.QPTypeUD}
	m := proto.CreateQPReq{PD: c.pick(p), SendCQ: c.pick(p), RecvCQ: c.pick(p), Type: types[p.byte()%3], SigAll: p.byte()%2 == 0,
		Cap: verbs.QPCap{MaxSendWR: 1 + uint32(p.byte()%32), MaxRecvWR: 1 + uint32(p.byte()%32), MaxSendSGE: 1 + uint32(p.byte()%4),
			MaxRecvSGE: 1 + uint32(p.byte()%4), MaxInlineData: uint32(p.byte())}}
	if p.byte()%8 == 0 {
		m.SRQ = c.pick(p)
	}
	c.requestMsg(proto.OpCreateQP, &m)
}

// connectSelf takes a QP to RTS aimed at itself (or at any QPN), so that
// the WQEs written into its ring reach the NIC's engine and the wire.
func (c *fuzzClient) connectSelf(p *program, gid netip.Addr) {
	var r *ring
	for i := range c.rings {
		if c.rings[i].qpn != 0 {
			r = &c.rings[i]
			if p.byte()%2 == 0 {
				break
			}
		}
	}
	if r == nil {
		return
	}
	dest := r.qpn
	if d := p.u32(); p.byte()%8 == 0 && !slices.Contains(c.avoid, d) {
		dest = d
	}
	steps := []proto.ModifyQPReq{
		{QP: r.handle, Mask: verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags,
			Attr: verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, QKey: 0x1111, AccessFlags: memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic}},
		{QP: r.handle, Mask: verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer,
			Attr: verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: dest, RQPSN: 7, MaxDestRdAtomic: 4, MinRNRTimer: 1,
				AV: verbs.AddressVector{DGID: gid, HopLimit: 64, PortNum: 1}}},
		{QP: r.handle, Mask: verbs.AttrState | verbs.AttrSQPSN | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrMaxQPRdAtomic,
			Attr: verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 7, Timeout: 8, RetryCnt: 1, RNRRetry: 1, MaxRdAtomic: 4}},
	}
	for i := range steps {
		if st, _, _ := c.requestMsg(proto.OpModifyQP, &steps[i]); st != proto.StatusOK {
			// A UD QP takes other attributes: a Q_Key to INIT, the
			// state alone to RTR, a send PSN to RTS.
			steps[i].Mask &= verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrSQPSN
			if i == 0 {
				steps[i].Mask |= verbs.AttrQKey
			}
			c.requestMsg(proto.OpModifyQP, &steps[i])
		}
	}
}

// writeRing writes WQEs or raw bytes into one of the client's rings,
// publishes a producer index (the right one or a fuzzed one) and rings
// the doorbell.
func (c *fuzzClient) writeRing(p *program) {
	if len(c.rings) == 0 {
		return
	}
	r := &c.rings[int(p.byte())%len(c.rings)]
	if r.cq != nil {
		// A completion ring's client fields: the consumer and the arm.
		r.cq.Cons.Store(r.cq.Cons.Load() + uint32(p.byte()%8))
		r.cq.Arm.Store(uint32(p.byte() % 4))
		if p.byte()%2 == 0 {
			c.notice(proto.OpKickCQ, &proto.Handle{H: r.handle})
		}
		return
	}
	wr := &r.work.SQ
	if wr.Slots() == 0 || p.byte()%2 == 0 {
		wr = &r.work.RQ
	}
	if wr.Slots() == 0 {
		return
	}
	prod := wr.Prod.Load()
	n := 1 + uint32(p.byte()%4)
	for i := range n {
		slot := wr.Slot(prod + i)
		switch {
		case p.byte()%3 == 0:
			copy(slot, p.bytes(len(slot)))
		case wr == &r.work.SQ:
			ops := []verbs.WROpcode{verbs.WRSend, verbs.WRRDMAWrite, verbs.WRRDMARead, verbs.WRSendWithImm, verbs.WRAtomicCmpSwp, verbs.WRAtomicFetchAdd}
			sge := c.mr
			sge.Length = min(sge.Length, p.u32()%8192)
			w := verbs.SendWR{ID: uint64(i), Opcode: ops[p.byte()%byte(len(ops))], Flags: verbs.SendFlags(p.byte()) &^ verbs.SendInline,
				SGL: []verbs.SGE{sge}, RemoteAddr: c.mr.Addr + uint64(p.byte()), RKey: c.rkey, RemoteQPN: r.qpn, RemoteQKey: 0x1111}
			proto.PutSendWQE(slot, &w, c.pick(p), 0)
		default:
			proto.PutRecvWQE(slot, &verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{c.mr}})
		}
	}
	if p.byte()%8 == 0 {
		n = p.u32() // a runaway producer
	}
	wr.Prod.Store(prod + n)
	c.ring(binary.LittleEndian.Uint32(r.header[448:]))
}

// ring rings bell i of the session doorbell.
func (c *fuzzClient) ring(i uint32) {
	if c.bell == nil || c.bellFD < 0 {
		return
	}
	c.bell.Ring(i)
	unix.Sendto(c.bellFD, []byte{1}, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, nil)
}

// scribble stores a fuzzed word anywhere in a ring's header, the daemon's
// fields included (which it must never read back).
func (c *fuzzClient) scribble(p *program) {
	if len(c.rings) == 0 {
		return
	}
	r := &c.rings[int(p.byte())%len(c.rings)]
	off := int(p.byte()%(proto.RingHeaderLen/4)) * 4
	binary.LittleEndian.PutUint32(r.header[off:], p.u32())
	if p.byte()%2 == 0 {
		c.ring(binary.LittleEndian.Uint32(r.header[448:]))
	}
}

// scribbleBell sets fuzzed words in the session doorbell and wakes the
// daemon: bells of nothing, of other objects, all of them.
func (c *fuzzClient) scribbleBell(p *program) {
	if c.bell == nil {
		return
	}
	for k := p.byte() % 4; k > 0; k-- {
		c.bell.Ring(p.u32() % (proto.MaxBells + 64))
	}
	if c.bellFD >= 0 {
		unix.Sendto(c.bellFD, p.bytes(1+int(p.byte()%8)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, nil)
	}
}

// whole sends a whole message of the input's bytes; one that looks like a
// request gets the client's next sequence number and is awaited (the
// daemon answers even a malformed request).
func (c *fuzzClient) whole(p *program) {
	msg := slices.Clone(p.bytes(int(p.byte()) | int(p.byte())<<8))
	if len(msg) < proto.HeaderLen || proto.Kind(msg[2]) != proto.KindRequest {
		c.send(msg)
		return
	}
	c.seq++
	binary.LittleEndian.PutUint32(msg[4:], c.seq)
	if c.send(msg) {
		c.await(proto.Op(binary.LittleEndian.Uint16(msg)), c.seq)
	}
}

// blockAndFill makes every descriptor the client holds blocking (a
// descriptor shared with the daemon's would make the daemon's I/O wait)
// and fills the doorbell socket without the daemon's reading it.
func (c *fuzzClient) blockAndFill() {
	for _, fd := range c.fds {
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
			unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
		}
	}
	if c.bellFD < 0 {
		return
	}
	for range 1 << 12 {
		if _, err := unix.SendmsgN(c.bellFD, []byte{1}, nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL); err != nil {
			return
		}
	}
}

// ops returns every op with request bodies, sorted: the fuzz input names
// them by index.
func ops() []proto.Op {
	var out []proto.Op
	for _, op := range proto.Ops() {
		if b, _ := proto.BodiesOf(op); b.Request != nil {
			out = append(out, op)
		}
	}
	slices.Sort(out)
	return out
}

// play runs program p on the client until p ends, the daemon ends the
// session, or p closes the connection in the middle of a request.
func (c *fuzzClient) play(p *program, gid netip.Addr) {
	all := ops()
	if p.byte()%8 != 0 {
		c.open("rnic0")
	}
	for steps := 0; !p.done() && !c.gone && steps < 64; steps++ {
		switch p.byte() % 15 {
		case 0: // any op, a body of the input's bytes
			c.request(all[int(p.byte())%len(all)], p.bytes(int(p.byte())), len(c.pending))
		case 1: // any op, a well-formed body with a few bytes changed
			op := all[int(p.byte())%len(all)]
			b, _ := proto.BodiesOf(op)
			w := proto.NewWriter(nil)
			b.Request().Encode(w)
			body := w.Bytes()
			for k := p.byte() % 4; k > 0 && len(body) > 0; k-- {
				body[int(p.byte())%len(body)] = p.byte()
			}
			nfds := len(c.pending)
			if p.byte()%8 == 0 {
				nfds = int(p.byte() % 8) // a header that lies about them
			}
			c.request(op, body, nfds)
		case 2: // a datagram of anything
			c.send(p.bytes(1 + int(p.byte()%64)))
		case 3:
			c.descriptors(p)
		case 4:
			c.regMR(p)
		case 5:
			c.createCQ(p)
		case 6:
			c.createQP(p)
		case 7:
			c.connectSelf(p, gid)
		case 8, 9:
			c.writeRing(p)
		case 10:
			c.scribble(p)
		case 11:
			c.scribbleBell(p)
		case 12:
			c.whole(p)
		case 14:
			c.blockAndFill()
		case 13: // the end in the middle of a request
			op := all[int(p.byte())%len(all)]
			c.send(proto.AppendMessage(nil, proto.Header{Op: op, Kind: proto.KindRequest, Seq: 1 << 30}, nil))
			return
		}
	}
}
