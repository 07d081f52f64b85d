package ibv

// ResizeCQ is implemented by a CQ whose capacity can change
// (ibv_resize_cq): a Local device's.
type ResizeCQ interface {
	// Resize makes room for cqe completions, keeping those held; it fails
	// when they are more than cqe.
	Resize(cqe int) error
}

var _ ResizeCQ = (*localCQ)(nil)

func (c *localCQ) Resize(cqe int) error { return c.cq.Resize(cqe) }
