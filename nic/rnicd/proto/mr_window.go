// REG_MR_WINDOW: a memory region over a window of a client's memory arena
// (the drop-in libibverbs.so.1, nic/rnicd/dropin/libibverbs/memory.c).
//
// A C program registers memory it allocated itself (malloc, mmap, static
// data), which the daemon cannot map. The library keeps one sparse memfd
// per process, as large as the address space and sealed against
// shrinking, in which file offset = virtual address; registering a range
// moves its pages onto that file (MAP_SHARED|MAP_FIXED at the same
// addresses, contents kept). The daemon then maps only the pages of the
// file the MR covers, not the whole file as REG_MR does.
//
//	REG_MR_WINDOW  request RegMRWindowReq + the arena memfd   reply RegMRReply
//
// The window is [Offset rounded down to a page, Offset+Length rounded up);
// the MR is the Length bytes at Offset, registered at IOVA with Access.

package proto

// OpRegMRWindow registers an MR over a window of the memfd sent with it.
const OpRegMRWindow Op = 0x0021

func init() {
	NameOp(OpRegMRWindow, "REG_MR_WINDOW")
	RegisterBodies(OpRegMRWindow, Bodies{func() Message { return new(RegMRWindowReq) }, func() Message { return new(RegMRReply) }})
}

// RegMRWindowReq registers Length bytes at file offset Offset of the
// memfd sent with it at address IOVA.
type RegMRWindowReq struct {
	PD     uint32
	Access uint32
	Offset uint64
	Length uint64
	IOVA   uint64
}

func (m *RegMRWindowReq) Encode(w *Writer) {
	w.U32(m.PD)
	w.U32(m.Access)
	w.U64(m.Offset)
	w.U64(m.Length)
	w.U64(m.IOVA)
}

func (m *RegMRWindowReq) Decode(r *Reader) {
	m.PD = r.U32()
	m.Access = r.U32()
	m.Offset = r.U64()
	m.Length = r.U64()
	m.IOVA = r.U64()
}
