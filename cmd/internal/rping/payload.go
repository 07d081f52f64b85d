// The ping data: rping's rping_test_client fills its source buffer with
// "rdma-ping-%d: " and then a run of ASCII from start ('A' on ping 0,
// advancing one per ping), each byte one more than the last and wrapping
// from 'z' (122) back to 'A' (65); the last byte is NUL.

package rping

import "strconv"

const (
	runFirst = 'A' // 65
	runLast  = 'z' // 122
)

// runStart is the first character of ping n's run.
func runStart(n int) byte {
	return byte(runFirst + n%(runLast-runFirst+1))
}

// FillPing writes ping n's data into buf (the whole buffer, as rping,
// whose size is at least MinSize). A prefix that does not fit is cut, as
// snprintf cuts it.
func FillPing(buf []byte, n int) {
	if len(buf) == 0 {
		return
	}
	var pre [32]byte
	p := strconv.AppendInt(append(pre[:0], "rdma-ping-"...), int64(n), 10)
	p = append(p, ": "...)
	cc := copy(buf[:len(buf)-1], p)
	c := runStart(n)
	for i := cc; i < len(buf); i++ {
		buf[i] = c
		if c++; c > runLast {
			c = runFirst
		}
	}
	buf[len(buf)-1] = 0
}

// cString is b up to its first NUL (all of b without one): what rping's
// printf("%s") and strlen see.
func cString(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}
