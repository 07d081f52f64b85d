// The two result lines of rc_pingpong, computed with its formulas and its
// float arithmetic: bytes = 2 × size × iters (each side counts both
// directions), the time in microseconds held in a C float.

package pingpong

import (
	"fmt"
	"io"
)

// Bytes is the byte count rc_pingpong reports: size × iters × 2.
func (r *Result) Bytes() int64 { return int64(r.Size) * int64(r.Iters) * 2 }

// Usec is the elapsed time in microseconds as rc_pingpong holds it: a
// single-precision float.
func (r *Result) Usec() float64 { return float64(float32(r.Elapsed.Microseconds())) }

// Mbps is the throughput rc_pingpong prints: bits per microsecond.
func (r *Result) Mbps() float64 { return float64(r.Bytes()) * 8 / r.Usec() }

// UsecPerIter is the time per iteration rc_pingpong prints.
func (r *Result) UsecPerIter() float64 { return r.Usec() / float64(r.Iters) }

// writeReport prints the result lines, and with Check one line per invalid
// page, as rc_pingpong does.
func writeReport(w io.Writer, r *Result) {
	usec := r.Usec()
	fmt.Fprintf(w, "%d bytes in %.2f seconds = %.2f Mbit/sec\n", r.Bytes(), usec/1e6, r.Mbps())
	fmt.Fprintf(w, "%d iters in %.2f seconds = %.2f usec/iter\n", r.Iters, usec/1e6, r.UsecPerIter())
	for _, p := range r.InvalidPages {
		fmt.Fprintf(w, "invalid data in page %d\n", p)
	}
}
