// Memory windows: ALLOC_MW and DEALLOC_MW. A bind, of either type, is a
// BIND_MW WQE in the QP's send ring (wqe.go), executed in order with the
// QP's other work requests.
//
//	ALLOC_MW    request AllocMWReq  reply AllocMWReply
//	DEALLOC_MW  request Handle      reply Empty

package proto

// Memory window ops.
const (
	// OpAllocMW allocates a window of a type in a PD.
	OpAllocMW Op = 0x0040
	// OpDeallocMW frees a window (bound or not).
	OpDeallocMW Op = 0x0041
)

func init() {
	registerOps([]opDecl{
		{OpAllocMW, "ALLOC_MW", Bodies{func() Message { return new(AllocMWReq) }, func() Message { return new(AllocMWReply) }}},
		{OpDeallocMW, "DEALLOC_MW", Bodies{func() Message { return new(Handle) }, func() Message { return new(Empty) }}},
	})
}

// AllocMWReq allocates a window of Type (1, or 2 for 2B) in PD.
type AllocMWReq struct{ PD, Type uint32 }

func (m *AllocMWReq) Encode(w *Writer) { w.U32(m.PD); w.U32(m.Type) }
func (m *AllocMWReq) Decode(r *Reader) { m.PD = r.U32(); m.Type = r.U32() }

// AllocMWReply is the new window's handle and its rkey.
type AllocMWReply struct{ MW, RKey uint32 }

func (m *AllocMWReply) Encode(w *Writer) { w.U32(m.MW); w.U32(m.RKey) }
func (m *AllocMWReply) Decode(r *Reader) { m.MW = r.U32(); m.RKey = r.U32() }
