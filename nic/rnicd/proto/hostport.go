// Host ports (TAP mode): a client hands the daemon a TAP of its own (its
// fd, SCM_RIGHTS) for one of the daemon's TAP-mode NICs, and the daemon
// bridges it with the NIC's wire (nic/tapnic/hostport.go): the program
// behind the TAP, in a namespace of its own, then reaches the wire with the
// NIC's MAC and addresses. The attachment lasts as long as the connection;
// a connection that attaches opens no device (like the admin ops).
//
//	ATTACH_HOST_PORT  request AttachHostPortReq + the TAP's fd   reply AttachHostPortReply
//
// Errors: no device of that name (StatusNoDevice), a NIC that is not in
// the TAP mode (StatusNotSupported), a NIC with a host port already
// (StatusBusy), an fd that is not a TAP (StatusInvalid).

package proto

import "net/netip"

// OpRangeHostPort is the host ports' op range, 0x0400–0x04ff.
const OpRangeHostPort Op = 0x0400

// Host port ops.
const OpAttachHostPort Op = 0x0400

func init() {
	NameOp(OpAttachHostPort, "ATTACH_HOST_PORT")
	RegisterBodies(OpAttachHostPort, Bodies{func() Message { return new(AttachHostPortReq) },
		func() Message { return new(AttachHostPortReply) }})
}

// AttachHostPortReq names the NIC the TAP that comes with it joins.
type AttachHostPortReq struct{ Device string }

func (m *AttachHostPortReq) Encode(w *Writer) { w.String(m.Device) }
func (m *AttachHostPortReq) Decode(r *Reader) { m.Device = r.String(MaxName) }

// AttachHostPortReply says what the TAP's kernel side should carry: the
// NIC's MAC (answers to any other never reach it) and Ethernet MTU.
type AttachHostPortReply struct {
	MAC [6]byte
	MTU uint32
	// Prefixes are the NIC's addresses with their on-link prefixes, for
	// the TAP's kernel side to carry (MaxGIDs at most).
	Prefixes []netip.Prefix
}

func (m *AttachHostPortReply) Encode(w *Writer) {
	w.Raw(m.MAC[:])
	w.U32(m.MTU)
	w.U32(uint32(len(m.Prefixes)))
	for _, p := range m.Prefixes {
		w.Addr(p.Addr())
		w.U8(uint8(p.Bits()))
	}
}

func (m *AttachHostPortReply) Decode(r *Reader) {
	for i := range m.MAC {
		m.MAC[i] = r.U8()
	}
	m.MTU = r.U32()
	n := r.U32()
	if n > MaxGIDs {
		r.fail("%d prefixes, at most %d", n, MaxGIDs)
		return
	}
	m.Prefixes = make([]netip.Prefix, 0, n)
	for range n {
		a, bits := r.Addr(), int(r.U8())
		if r.Err() != nil {
			return
		}
		if !a.IsValid() || bits > a.BitLen() {
			r.fail("prefix %v/%d", a, bits)
			return
		}
		m.Prefixes = append(m.Prefixes, netip.PrefixFrom(a, bits))
	}
}
