// REREG_MR_WINDOW: re-register an MR (ibv_rereg_mr) under the same keys:
// its PD and access rights as given, and, with ReregTranslation, new
// memory: a window of the arena memfd sent with it, as REG_MR_WINDOW
// takes one. Without ReregTranslation no descriptor comes and the MR keeps
// its memory and addresses.
//
//	REREG_MR_WINDOW  request ReregMRWindowReq [+ the arena memfd]  reply RegMRReply

package proto

// OpReregMRWindow re-registers an MR.
const OpReregMRWindow Op = 0x0030

// ReregTranslation in ReregMRWindowReq.Flags: the MR gets new memory.
const ReregTranslation = 1 << 0

func init() {
	NameOp(OpReregMRWindow, "REREG_MR_WINDOW")
	RegisterBodies(OpReregMRWindow, Bodies{func() Message { return new(ReregMRWindowReq) }, func() Message { return new(RegMRReply) }})
}

// ReregMRWindowReq re-registers MR in PD with Access; with
// ReregTranslation in Flags, over the Length bytes at file offset Offset
// of the memfd sent with it, at address IOVA.
type ReregMRWindowReq struct {
	MR, Flags, PD, Access uint32
	Offset, Length, IOVA  uint64
}

func (m *ReregMRWindowReq) Encode(w *Writer) {
	w.U32(m.MR)
	w.U32(m.Flags)
	w.U32(m.PD)
	w.U32(m.Access)
	w.U64(m.Offset)
	w.U64(m.Length)
	w.U64(m.IOVA)
}

func (m *ReregMRWindowReq) Decode(r *Reader) {
	m.MR = r.U32()
	m.Flags = r.U32()
	m.PD = r.U32()
	m.Access = r.U32()
	m.Offset = r.U64()
	m.Length = r.U64()
	m.IOVA = r.U64()
}
