// The size of a simulation: both NICs and every buffer live in this
// process, so the QPs, their depth and the largest message are bounded
// together by the memory they take, checked before anything is built.

package sim

import "fmt"

// Limits of a Config's fields.
const (
	MaxQPs    = 4096    // QP pairs
	MaxDepth  = 4096    // outstanding operations per QP
	MaxMaxMsg = 1 << 24 // largest message (16 MiB)
	// MaxBufferBytes bounds the registered memory of both NICs: every QP
	// end's source area and slots (layout).
	MaxBufferBytes = 1 << 30
)

// BufferBytes is the memory the buffers of every QP of both NICs take.
func (c Config) BufferBytes() int64 {
	w := world{cfg: c}
	return 2 * int64(c.QPs) * int64(w.layout().size)
}

// checkSize refuses a simulation too large for the process, naming the
// flags of rnic sim.
func (c *Config) checkSize() error {
	switch {
	case c.QPs > MaxQPs:
		return fmt.Errorf("sim: --qps %d: must be 1..%d", c.QPs, MaxQPs)
	case c.Depth > MaxDepth:
		return fmt.Errorf("sim: --depth %d: must be 1..%d", c.Depth, MaxDepth)
	case c.MaxMsg > MaxMaxMsg:
		return fmt.Errorf("sim: --max-msg %d: must be 1..%d", c.MaxMsg, MaxMaxMsg)
	}
	if n := c.BufferBytes(); n > MaxBufferBytes {
		return fmt.Errorf("sim: --qps %d × --depth %d × --max-msg %d: the buffers would take %d MiB, at most %d MiB",
			c.QPs, c.Depth, c.MaxMsg, n>>20, MaxBufferBytes>>20)
	}
	return nil
}
