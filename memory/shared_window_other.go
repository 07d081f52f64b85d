//go:build !linux

package memory

import (
	"errors"
	"fmt"
)

// MapSharedWindow is not supported on this platform.
func MapSharedWindow(fd int, off int64, size int) (*Shared, error) {
	return nil, fmt.Errorf("memory: shared memory: %w", errors.ErrUnsupported)
}
