package ibv

// ResizeCQ is implemented by a CQ whose capacity can change
// (ibv_resize_cq): an in-process NIC's (nic.AsIBV).
type ResizeCQ interface {
	// Resize makes room for cqe completions, keeping those held; it fails
	// when they are more than cqe.
	Resize(cqe int) error
}
