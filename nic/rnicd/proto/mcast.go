// ATTACH_MCAST, DETACH_MCAST: attach a UD QP to a multicast group and
// detach it (ibv_attach_mcast, ibv_detach_mcast). The GID is the group's
// 16 bytes as the verbs give them (IPv4-mapped or IPv6); the LID is
// passed along and ignored on RoCE. The NIC's model applies the rules
// (EINVAL for a QP that is not UD or a GID that is not multicast, ENOMEM
// past the limits); the daemon refuses to destroy a QP still attached
// (StatusBusy), as the kernel does.
//
//	ATTACH_MCAST  request McastReq  reply Empty
//	DETACH_MCAST  request McastReq  reply Empty

package proto

import "net/netip"

// Multicast ops.
const (
	OpAttachMcast Op = 0x0048
	OpDetachMcast Op = 0x0049
)

func init() {
	registerOps([]opDecl{
		{OpAttachMcast, "ATTACH_MCAST", Bodies{func() Message { return new(McastReq) }, func() Message { return new(Empty) }}},
		{OpDetachMcast, "DETACH_MCAST", Bodies{func() Message { return new(McastReq) }, func() Message { return new(Empty) }}},
	})
}

// McastReq names a QP and a group.
type McastReq struct {
	QP  uint32
	GID [16]byte
	LID uint16
}

// Group returns the GID as an address (in its 16-byte form).
func (m *McastReq) Group() netip.Addr { return netip.AddrFrom16(m.GID) }

func (m *McastReq) Encode(w *Writer) { w.U32(m.QP); w.Raw(m.GID[:]); w.U16(m.LID) }

func (m *McastReq) Decode(r *Reader) {
	m.QP = r.U32()
	if b := r.take(16); b != nil {
		m.GID = [16]byte(b)
	}
	m.LID = r.U16()
}
