// Checking that the data really moved: every source region holds a
// pattern that names its side and QP, and after a run the side whose
// target regions received data compares them with the pattern the other
// side sent (for atomics: the word holds the number of operations).

package perf

import (
	"encoding/binary"
)

// Check is the outcome of the data check of a run.
type Check struct {
	// Bytes is the number of bytes compared, Mismatched how many differed.
	Bytes      int64 `json:"bytes"`
	Mismatched int64 `json:"mismatched"`
	// Skipped says why nothing could be compared: the peer is perftest,
	// whose data rnic cannot predict.
	Skipped string `json:"skipped,omitempty"`
}

// OK reports whether something was compared and nothing differed, or the
// check could not be made.
func (c Check) OK() bool { return c.Skipped != "" || c.Bytes > 0 && c.Mismatched == 0 }

// pattern is byte i of QP qp's source region on the side with seed.
func pattern(seed byte, qp, i int) byte {
	return byte(i) ^ byte(i>>8)*7 ^ byte(qp)*13 ^ seed
}

func fillPattern(b []byte, seed byte, qp int) {
	for i := range b {
		b[i] = pattern(seed, qp, i)
	}
}

// patternPeriod: pattern repeats every 2^16 bytes of a region, and
// depends on the QP only through its low byte.
const patternPeriod = 1 << 16

// patterns fills source regions by copying one computed period per QP
// low byte: 10,000 QPs of 64 KiB are 655 MB to fill, which byte by byte
// took seconds of the setup.
type patterns struct {
	seed byte
	t    [256][]byte
}

// fill fills b as fillPattern(b, p.seed, qp) does.
func (p *patterns) fill(b []byte, qp int) {
	n := min(len(b), patternPeriod)
	t := p.t[byte(qp)]
	if len(t) < n {
		t = make([]byte, n)
		fillPattern(t, p.seed, qp)
		p.t[byte(qp)] = t
	}
	for off := 0; off < len(b); {
		off += copy(b[off:], t[:n])
	}
}

// checkTargets compares the target regions of s with what the peer (with
// peerSeed) sent there, after iters operations per QP. For a WRITE latency
// test the last byte carries the sequence number instead of the pattern:
// it must be the last one, iters.
func (s *side) checkTargets(peerSeed byte, iters int) Check {
	var c Check
	for qi, q := range s.qps {
		switch {
		case s.cfg.Op == OpAtomic:
			c.Bytes += atomicSize
			if binary.NativeEndian.Uint64(q.dst) != uint64(iters) {
				c.Mismatched += atomicSize
			}
		default:
			n := len(q.dst)
			if s.cfg.Op == OpWrite && s.cfg.Mode == ModeLat {
				n--
				c.Bytes++
				if loadByte(q.dst, n) != byte(iters) {
					c.Mismatched++
				}
			}
			for i := 0; i < n; i++ {
				if q.dst[i] != pattern(peerSeed, qi, i) {
					c.Mismatched++
				}
			}
			c.Bytes += int64(n)
		}
	}
	return c
}

// clientChecks reports whether the client's targets receive the data: for
// a READ, which fetches the server's source; otherwise the server's do.
func (c *Config) clientChecks() bool { return c.Op == OpRead }
