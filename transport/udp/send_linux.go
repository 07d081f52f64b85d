// Sending: one sendmsg per frame (Send) or sendmmsg per run of frames that
// share a source port (SendBatch).
//
// Each message carries the frame's TOS and TTL (traffic class and hop
// limit) as ancillary data, so the socket needs no per-packet setsockopt
// and concurrent senders with different values cannot race. The message
// headers, iovecs, destination addresses and control buffers live in pooled
// msgs values whose pointers are wired once, so the steady state allocates
// nothing per frame; the payload is passed to the kernel in place.

package udp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/transport"
)

// ctlSendLen is the control buffer of one outgoing message: two int-sized
// cmsgs (TOS or traffic class, TTL or hop limit).
var ctlSendLen = 2 * unix.CmsgSpace(4)

// msgs is the scratch for sending up to len(hdrs) messages.
type msgs struct {
	v6    bool
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // large enough for either family
	ctl   []byte                  // len(hdrs) control buffers of ctlSendLen, 8-byte aligned
	copy  []byte                  // a frame copy for Config.Reseal

	// Arguments and results of the system call made through a RawConn.
	off, cnt int
	sent     int
	errno    unix.Errno
	one, mm  func(fd uintptr) bool // prebuilt method values: no closure per call
}

func newMsgs(n int, v6 bool) *msgs {
	m := &msgs{
		v6:    v6,
		hdrs:  make([]unix.Mmsghdr, n),
		iovs:  make([]unix.Iovec, n),
		names: make([]unix.RawSockaddrInet6, n),
	}
	words := make([]uint64, (n*ctlSendLen+7)/8)
	m.ctl = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	for i := range m.hdrs {
		h := &m.hdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&m.names[i]))
		h.Iov = &m.iovs[i]
		h.SetIovlen(1)
		h.Control = &m.ctl[i*ctlSendLen]
		h.SetControllen(ctlSendLen)
	}
	m.one, m.mm = m.sendmsg, m.sendmmsg
	return m
}

// fill prepares message i to send payload as o describes.
func (m *msgs) fill(i int, o *outgoing, payload []byte) {
	h := &m.hdrs[i].Hdr
	if len(payload) > 0 {
		m.iovs[i].Base = &payload[0]
	} else {
		m.iovs[i].Base = nil
	}
	m.iovs[i].SetLen(len(payload))
	sa := &m.names[i]
	ctl := m.ctl[i*ctlSendLen : (i+1)*ctlSendLen]
	if o.v6 {
		*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: o.dst}
		putPort(&sa.Port, o.dstPort)
		h.Namelen = unix.SizeofSockaddrInet6
		n := putCmsgInt(ctl, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, int32(o.tos))
		putCmsgInt(ctl[n:], unix.IPPROTO_IPV6, unix.IPV6_HOPLIMIT, int32(o.ttl))
	} else {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: [4]byte(o.dst[:4])}
		putPort(&sa4.Port, o.dstPort)
		h.Namelen = unix.SizeofSockaddrInet4
		n := putCmsgInt(ctl, unix.IPPROTO_IP, unix.IP_TOS, int32(o.tos))
		putCmsgInt(ctl[n:], unix.IPPROTO_IP, unix.IP_TTL, int32(o.ttl))
	}
}

// release drops the references to callers' frames, so a pooled msgs does
// not keep them alive.
func (m *msgs) release(n int) {
	for i := range n {
		m.iovs[i].Base = nil
	}
}

// putPort stores a port in network byte order into a sockaddr's port field.
func putPort(p *uint16, port uint16) {
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(p))[:], port)
}

// putCmsgInt writes one cmsg carrying a host-order int into b and returns
// the bytes it took.
func putCmsgInt(b []byte, level, typ int32, v int32) int {
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(4))
	*(*int32)(unsafe.Pointer(&b[unix.CmsgLen(0)])) = v
	return unix.CmsgSpace(4)
}

// sendmsg sends message 0 (a RawConn.Write callback).
func (m *msgs) sendmsg(fd uintptr) bool {
	for {
		_, _, e := unix.Syscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&m.hdrs[0].Hdr)), 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false // socket buffer full: wait until writable
		}
		m.errno = e
		return true
	}
}

// sendmmsg sends messages off..off+cnt-1 (a RawConn.Write callback),
// recording how many the kernel took.
func (m *msgs) sendmmsg(fd uintptr) bool {
	for {
		n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&m.hdrs[m.off])), uintptr(m.cnt), 0, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		m.sent, m.errno = int(n), e
		return true
	}
}

// send implements Send for a non-empty frame.
func (e *Endpoint) send(frame []byte) error {
	o, err := parseOutgoing(frame, e.cfg.Addr)
	if err != nil {
		e.ctr.send.malformed.Add(1)
		return err
	}
	ps, err := e.sockFor(o.srcPort)
	if err != nil {
		return err
	}
	defer ps.done()
	if peer := e.localPeer(&o); peer != nil && !ps.fallback {
		e.loop(peer, &o)
		return nil
	}
	m := e.sys.one.Get().(*msgs)
	defer e.sys.one.Put(m)
	payload := o.payload
	if ps.fallback {
		e.ctr.send.fallbacks.Add(1)
		payload = e.reseal(m, frame, &o)
	}
	m.fill(0, &o, payload)
	m.errno = 0
	err = ps.s.rc.Write(m.one)
	m.release(1)
	switch {
	case err != nil && e.closedErr(err):
		return transport.ErrClosed
	case err != nil:
		return e.sendFailed(&o, err)
	case m.errno != 0:
		return e.sendFailed(&o, m.errno)
	}
	e.ctr.send.sent.Add(1)
	return nil
}

// reseal handles a frame whose source port fell back to the main socket's:
// it rewrites the port in a copy, lets Config.Reseal fix what covers it,
// and returns the copy's payload. Without Reseal the payload goes out as is.
func (e *Endpoint) reseal(m *msgs, frame []byte, o *outgoing) []byte {
	o.srcPort = e.cfg.Port
	if e.cfg.Reseal == nil {
		return o.payload
	}
	m.copy = append(m.copy[:0], frame...)
	binary.BigEndian.PutUint16(m.copy[o.udpOff:], e.cfg.Port)
	e.cfg.Reseal(m.copy)
	start := o.udpOff + udpLen
	return m.copy[start : start+len(o.payload)]
}

// sendFailed counts a frame the kernel refused and words the error.
func (e *Endpoint) sendFailed(o *outgoing, err error) error {
	e.ctr.send.sendErrors.Add(1)
	return fmt.Errorf("udp: send from port %d to %v: %w", o.srcPort, netip.AddrPortFrom(addrOf(o.v6, &o.dst), o.dstPort), err)
}

// closedErr reports whether err from a socket's RawConn (not an errno of
// the system call) means that Close closed it. The os package reports a
// file closed under a pending call with an unexported error
// (poll.ErrFileClosing), not os.ErrClosed, but our sockets are only ever
// closed after the closed flag is set.
func (e *Endpoint) closedErr(err error) bool {
	return errors.Is(err, os.ErrClosed) || e.closed.Load()
}

// sendBatch implements SendBatch.
func (e *Endpoint) sendBatch(frames [][]byte) error {
	m := e.sys.batch.Get().(*msgs)
	defer e.sys.batch.Put(m)
	var first error
	note := func(err error) {
		if first == nil {
			first = err
		}
	}
	var run portSock // the socket of messages 0..k-1, one use held
	k := 0
	for _, frame := range frames {
		if len(frame) == 0 {
			e.ctr.send.malformed.Add(1)
			note(transport.ErrEmptyFrame)
			continue
		}
		o, err := parseOutgoing(frame, e.cfg.Addr)
		if err != nil {
			e.ctr.send.malformed.Add(1)
			note(err)
			continue
		}
		ps, err := e.sockFor(o.srcPort)
		if err != nil {
			note(err)
			break
		}
		if peer := e.localPeer(&o); peer != nil && !ps.fallback {
			ps.done()
			e.loop(peer, &o)
			continue
		}
		if ps.fallback {
			// Rare: send it on its own, through the resealing path.
			if err := e.flush(m, run.s, k); err != nil {
				note(err)
			}
			run.done()
			run, k = portSock{}, 0
			if err := e.send(frame); err != nil {
				note(err)
			}
			continue
		}
		if ps.s == run.s {
			ps.done() // run holds a use already
		} else {
			if err := e.flush(m, run.s, k); err != nil {
				note(err)
			}
			run.done()
			run, k = ps, 0
		}
		if k == len(m.hdrs) {
			if err := e.flush(m, run.s, k); err != nil {
				note(err)
			}
			k = 0
		}
		m.fill(k, &o, o.payload)
		k++
	}
	if err := e.flush(m, run.s, k); err != nil {
		note(err)
	}
	run.done()
	return first
}

// flush sends the k prepared messages through s, with as many sendmmsg
// calls as it takes. A message the kernel refuses is counted and skipped.
func (e *Endpoint) flush(m *msgs, s *sock, k int) error {
	defer m.release(k)
	var first error
	for off := 0; off < k; {
		m.off, m.cnt, m.sent, m.errno = off, k-off, 0, 0
		err := s.rc.Write(m.mm)
		if err != nil {
			if e.closedErr(err) {
				return transport.ErrClosed
			}
			e.ctr.send.sendErrors.Add(uint64(k - off))
			return fmt.Errorf("udp: sendmmsg: %w", err)
		}
		e.ctr.send.sendBatches.Add(1)
		if m.sent > 0 && m.errno == 0 {
			e.ctr.send.sent.Add(uint64(m.sent))
			off += m.sent
			continue
		}
		// The message at off failed on its own (sendmmsg reports an
		// error only when the first message of the call fails).
		e.ctr.send.sendErrors.Add(1)
		if first == nil {
			first = fmt.Errorf("udp: sendmmsg message %d: %w", off, m.errno)
		}
		off++
	}
	return first
}
