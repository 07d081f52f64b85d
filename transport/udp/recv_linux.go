// Receiving: one goroutine per endpoint reads the listening socket with
// recvmmsg and hands each batch to the receiver as rebuilt frames.
//
// Reading up to BatchSize datagrams per system call is what makes a kernel
// socket keep up with a burst, and handing them over together lets the
// engine answer the burst with one coalesced ACK per QP. The kernel reports
// per datagram, as ancillary data, the destination address (IP_PKTINFO),
// TOS and TTL (traffic class, hop limit and flow label over IPv6) and its
// drop count (SO_RXQ_OVFL); header.go turns that into the frame's headers.
// With Config.RecvTimestamps it also reports the datagram's receive time
// (SCM_TIMESTAMPNS), kept beside the frame for Endpoint.Arrival.
//
// Every buffer is allocated once: a slot per message with room for the
// synthesized headers in front of the payload, the mmsghdr array, and the
// control buffers. The steady state allocates nothing per datagram.

package udp

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/transport/poll"
)

// ctlRecvLen is the control buffer of one received message: room for the
// in6_pktinfo and four int-sized cmsgs, more than either family gets.
var ctlRecvLen = unix.CmsgSpace(unix.SizeofInet6Pktinfo) + 4*unix.CmsgSpace(4)

// ctlStampLen is the room a receive timestamp (struct timespec) adds.
var ctlStampLen = unix.CmsgSpace(sizeofTimespec)

// reader is the receive loop's state.
type reader struct {
	e      *Endpoint
	s      *sock
	v6     bool
	local  [16]byte // the endpoint's address, IPv4 in the first four bytes
	slot   int      // bytes per message buffer: hdrRoom + MaxDatagram
	hdrs   []unix.Mmsghdr
	iovs   []unix.Iovec
	names  []unix.RawSockaddrInet6
	ctl    []byte
	ctlLen int // control bytes per message
	bufs   []byte
	frames [][]byte
	// With RecvTimestamps: each message's receive time (Unix ns, 0 if
	// the kernel gave none), and the frames' for Endpoint.Arrival.
	msgAt  []int64
	stamps []int64
	used   int // messages the previous recvmmsg filled, to reset

	poll  poll.Poller
	n     int // result of the last recvmmsg
	errno unix.Errno
	read  func(fd uintptr) bool // prebuilt method value
}

func newReader(e *Endpoint, s *sock) *reader {
	n := e.cfg.BatchSize
	r := &reader{
		e: e, s: s, v6: e.cfg.Addr.Is6(),
		slot:   hdrRoom + e.cfg.MaxDatagram,
		hdrs:   make([]unix.Mmsghdr, n),
		iovs:   make([]unix.Iovec, n),
		names:  make([]unix.RawSockaddrInet6, n),
		frames: make([][]byte, 0, n),
		ctlLen: ctlRecvLen,
	}
	if e.cfg.RecvTimestamps {
		r.ctlLen += ctlStampLen
		r.msgAt, r.stamps = make([]int64, n), make([]int64, 0, n)
	}
	copy(r.local[:], e.cfg.Addr.AsSlice())
	r.bufs = make([]byte, n*r.slot)
	words := make([]uint64, (n*r.ctlLen+7)/8)
	r.ctl = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	for i := range r.hdrs {
		r.iovs[i].Base = &r.bufs[i*r.slot+hdrRoom]
		r.iovs[i].SetLen(e.cfg.MaxDatagram)
		h := &r.hdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&r.names[i]))
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
		h.Control = &r.ctl[i*r.ctlLen]
	}
	r.used = n
	r.read = r.recvmmsg
	return r
}

// run reads until the socket is closed.
func (r *reader) run() {
	defer r.poll.Release()
	// Other pollers of the process park for this socket's datagrams
	// (transport/poll).
	var stop func()
	if err := r.s.rc.Control(func(fd uintptr) { stop = r.poll.Watch(int(fd)) }); err == nil {
		defer stop()
	}
	for {
		r.n, r.errno = 0, 0
		if err := r.s.rc.Read(r.read); err != nil {
			if !r.e.closedErr(err) && !r.s.leaving.Load() {
				r.e.ctr.recv.recvErrors.Add(1)
			}
			return
		}
		if r.errno != 0 {
			r.e.ctr.recv.recvErrors.Add(1)
			continue
		}
		r.deliver()
	}
}

// recvmmsg reads a batch (a RawConn.Read callback).
func (r *reader) recvmmsg(fd uintptr) bool {
	// The kernel rewrote the lengths of the messages it filled last time.
	for i := range r.used {
		h := &r.hdrs[i].Hdr
		h.Namelen = unix.SizeofSockaddrInet6
		h.SetControllen(r.ctlLen)
		h.Flags = 0
	}
	r.used = 0
	for {
		n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])), uintptr(len(r.hdrs)), 0, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if r.pollAgain() {
				continue // a conversation: the next datagram is near (transport/poll)
			}
			return false // nothing queued: park until readable
		case 0:
			r.n, r.used = int(n), int(n)
			r.poll.Received()
		default:
			r.errno = e
		}
		return true
	}
}

// pollAgain says whether to try the socket again at once rather than
// park (transport/poll), unless the endpoint does not poll.
func (r *reader) pollAgain() bool { return !r.e.cfg.NoPoll && r.poll.Again() }

// deliver rebuilds the frames of the last batch and hands them over.
func (r *reader) deliver() {
	if r.n == 0 {
		return
	}
	r.e.ctr.recv.recvBatches.Add(1)
	frames := r.frames[:0]
	for i := range r.n {
		h := &r.hdrs[i]
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			r.e.ctr.recv.truncated.Add(1)
			continue
		}
		var a arrival
		r.describe(i, &a)
		slot := r.bufs[i*r.slot : (i+1)*r.slot]
		frames = append(frames, synthesize(slot, int(h.Len), &a, r.e.cfg.MAC, SyntheticMAC(addrOf(a.v6, &a.src))))
	}
	var stamps []int64
	if r.msgAt != nil {
		stamps = r.frameStamps()
	}
	r.e.deliver(frames, stamps)
}

// frameStamps returns the receive times of the last batch's frames (the
// messages deliver did not drop), and clears the messages' for the next
// batch. Apart from deliver's loop, so that the default path's loop stays
// as it was.
func (r *reader) frameStamps() []int64 {
	stamps := r.stamps[:0]
	for i := range r.n {
		if r.hdrs[i].Hdr.Flags&unix.MSG_TRUNC == 0 {
			stamps = append(stamps, r.msgAt[i])
		}
		r.msgAt[i] = 0
	}
	return stamps
}

// describe fills a from message i's source address and ancillary data.
// Absent ancillary data leaves the defaults a datagram to the bound
// address would have: the endpoint's address, TOS 0, TTL 64.
func (r *reader) describe(i int, a *arrival) {
	a.v6, a.ttl = r.v6, 64
	a.dstPort = r.e.cfg.Port
	a.dst = r.local
	sa := &r.names[i]
	if r.v6 {
		a.src = sa.Addr
		a.srcPort = getPort(&sa.Port)
	} else {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		copy(a.src[:4], sa4.Addr[:])
		a.srcPort = getPort(&sa4.Port)
	}
	h := &r.hdrs[i].Hdr
	ctl := r.ctl[i*r.ctlLen : i*r.ctlLen+int(h.Controllen)]
	for len(ctl) >= unix.SizeofCmsghdr {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		l := int(c.Len)
		if l < unix.CmsgLen(0) || l > len(ctl) {
			break
		}
		data := ctl[unix.CmsgLen(0):l]
		switch {
		case c.Level == unix.IPPROTO_IP && c.Type == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
			p := (*unix.Inet4Pktinfo)(unsafe.Pointer(&data[0]))
			copy(a.dst[:4], p.Addr[:])
		case c.Level == unix.IPPROTO_IP && c.Type == unix.IP_TOS && len(data) >= 1:
			a.tos = data[0]
		case c.Level == unix.IPPROTO_IP && c.Type == unix.IP_TTL && len(data) >= 4:
			a.ttl = uint8(binary.NativeEndian.Uint32(data))
		case c.Level == unix.IPPROTO_IPV6 && c.Type == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
			p := (*unix.Inet6Pktinfo)(unsafe.Pointer(&data[0]))
			a.dst = p.Addr
		case c.Level == unix.IPPROTO_IPV6 && c.Type == unix.IPV6_TCLASS && len(data) >= 4:
			a.tos = uint8(binary.NativeEndian.Uint32(data))
		case c.Level == unix.IPPROTO_IPV6 && c.Type == unix.IPV6_HOPLIMIT && len(data) >= 4:
			a.ttl = uint8(binary.NativeEndian.Uint32(data))
		case c.Level == unix.IPPROTO_IPV6 && c.Type == ipv6FlowInfo && len(data) >= 4:
			a.flowLabel = binary.BigEndian.Uint32(data) & 0xFFFFF
		case c.Level == unix.SOL_SOCKET && c.Type == unix.SO_RXQ_OVFL && len(data) >= 4:
			r.e.ctr.recv.kernelDrops.Store(uint64(binary.NativeEndian.Uint32(data)))
		case c.Level == unix.SOL_SOCKET && c.Type == unix.SCM_TIMESTAMPNS && r.msgAt != nil:
			r.msgAt[i] = stampNanos(data)
		}
		next := unix.CmsgSpace(l - unix.CmsgLen(0))
		if next >= len(ctl) {
			break
		}
		ctl = ctl[next:]
	}
}

// getPort reads a port stored in network byte order in a sockaddr.
func getPort(p *uint16) uint16 {
	return binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(p))[:])
}
