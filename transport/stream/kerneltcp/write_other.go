//go:build !unix

package kerneltcp

import "syscall"

// writeNow leaves every write to the writer goroutine where a
// non-blocking write is not available.
func writeNow(syscall.RawConn, []byte) (int, error) { return 0, nil }
