//go:build verbs

// Parsing a sysfs counter file: one unsigned decimal number and a newline.
// The file comes from the kernel, but the parser treats it as untrusted
// bytes: no allocation, no panic, and anything but a number is refused.

package passthrough

// parseCounter parses b (a decimal number, optionally surrounded by ASCII
// space, tab or newline) without allocating; ok is false for anything
// else, including a value beyond 2^64−1.
func parseCounter(b []byte) (v uint64, ok bool) {
	i, j := 0, len(b)
	for i < j && isSpace(b[i]) {
		i++
	}
	for j > i && isSpace(b[j-1]) {
		j--
	}
	if i == j {
		return 0, false
	}
	for _, c := range b[i:j] {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
