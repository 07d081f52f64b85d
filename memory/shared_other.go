//go:build !linux

// Shared memory is only implemented on Linux (memfd); elsewhere the
// constructors report errors.ErrUnsupported so the rest of the package still
// builds and works over Go memory.

package memory

import (
	"errors"
	"fmt"
)

// NewShared is not supported on this platform.
func NewShared(size int) (*Shared, error) {
	return nil, fmt.Errorf("memory: shared memory: %w", errors.ErrUnsupported)
}

// MapShared is not supported on this platform.
func MapShared(fd int, size int) (*Shared, error) {
	return nil, fmt.Errorf("memory: shared memory: %w", errors.ErrUnsupported)
}

func (s *Shared) unmap() error { return nil }

func closeFd(int) error { return nil }
