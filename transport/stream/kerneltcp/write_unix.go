//go:build unix

package kerneltcp

import (
	"errors"
	"syscall"
)

// writeNow writes as much of b as the socket takes without waiting. It
// returns 0, nil when the socket buffer is full.
func writeNow(raw syscall.RawConn, b []byte) (int, error) {
	var (
		n    int
		werr error
	)
	err := raw.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), b)
		return true // never wait for writability: the writer goroutine does
	})
	if err != nil {
		return 0, err
	}
	if werr != nil {
		if errors.Is(werr, syscall.EAGAIN) || errors.Is(werr, syscall.EINTR) {
			return 0, nil
		}
		return 0, werr
	}
	return max(n, 0), nil
}
