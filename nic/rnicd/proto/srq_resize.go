// RESIZE_SRQ: ibv_modify_srq with IBV_SRQ_MAX_WR. The daemon takes every
// WQE the client wrote into the SRQ's ring, resizes its SRQ (refused, as
// rxe refuses, below the WQEs it holds or the armed limit) and gives the
// SRQ a new, empty receive ring of the new size in the session's arena
// (the chunk's memfd comes with it as with CREATE_SRQ). The new ring's
// producer and consumer indices start where the old ring's producer was,
// and its doorbell is the old one, so the client posts on from its own
// count; it writes only the new ring from then on.
//
//	RESIZE_SRQ  request ResizeSRQReq  reply CreateSRQReply [+ the chunk's memfd]

package proto

// OpResizeSRQ resizes an SRQ.
const OpResizeSRQ Op = 0x0054

func init() {
	NameOp(OpResizeSRQ, "RESIZE_SRQ")
	RegisterBodies(OpResizeSRQ, Bodies{func() Message { return new(ResizeSRQReq) }, func() Message { return new(CreateSRQReply) }})
}

// ResizeSRQReq resizes SRQ to hold MaxWR WQEs.
type ResizeSRQReq struct{ SRQ, MaxWR uint32 }

func (m *ResizeSRQReq) Encode(w *Writer) { w.U32(m.SRQ); w.U32(m.MaxWR) }
func (m *ResizeSRQReq) Decode(r *Reader) { m.SRQ = r.U32(); m.MaxWR = r.U32() }
