// RESIZE_CQ: ibv_resize_cq. The CQ gets a new completion ring of the new
// size, placed in the session's ring arena as CREATE_CQ_ON places one,
// holding the completions the client had not polled, in order, from
// index 0; the old ring is the daemon's again once the reply is sent, and
// the client reads only the new one from then on.
//
//	RESIZE_CQ  request ResizeCQReq  reply CreateCQOnReply [+ the chunk's memfd]

package proto

// OpResizeCQ resizes a CQ.
const OpResizeCQ Op = 0x0031

func init() {
	NameOp(OpResizeCQ, "RESIZE_CQ")
	RegisterBodies(OpResizeCQ, Bodies{func() Message { return new(ResizeCQReq) }, func() Message { return new(CreateCQOnReply) }})
}

// ResizeCQReq resizes CQ to hold CQE completions.
type ResizeCQReq struct{ CQ, CQE uint32 }

func (m *ResizeCQReq) Encode(w *Writer) { w.U32(m.CQ); w.U32(m.CQE) }
func (m *ResizeCQReq) Decode(r *Reader) { m.CQ = r.U32(); m.CQE = r.U32() }
