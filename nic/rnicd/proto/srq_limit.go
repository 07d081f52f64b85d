// SRQ_LIMIT: arm an SRQ's limit (ibv_modify_srq with IBV_SRQ_LIMIT; 0
// disarms it). When fewer WQEs than the limit remain in the NIC's queue,
// the daemon sends OpEvent SRQ_LIMIT_REACHED for the SRQ and the limit is
// disarmed. The SRQ's size is fixed: its ring was sized at creation.
//
//	SRQ_LIMIT  request SRQLimitReq  reply Empty

package proto

// OpSRQLimit arms or disarms an SRQ's limit.
const OpSRQLimit Op = 0x0022

func init() {
	NameOp(OpSRQLimit, "SRQ_LIMIT")
	RegisterBodies(OpSRQLimit, Bodies{func() Message { return new(SRQLimitReq) }, func() Message { return new(Empty) }})
}

// SRQLimitReq sets the limit of SRQ.
type SRQLimitReq struct{ SRQ, Limit uint32 }

func (m *SRQLimitReq) Encode(w *Writer) { w.U32(m.SRQ); w.U32(m.Limit) }
func (m *SRQLimitReq) Decode(r *Reader) { m.SRQ = r.U32(); m.Limit = r.U32() }
