// A window of someone else's memfd: rnicd maps only the part of a
// client's memory arena (a sparse memfd as large as the client's address
// space, file offset = virtual address) that one memory region covers.

package memory

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// MapSharedWindow maps size bytes at offset off of the memory behind fd,
// which must be sealed against shrinking (F_SEAL_SHRINK) and at least
// off+size bytes long; off must be a multiple of the page size. The
// result is a Shared like MapShared's (regions pin it); it works on its
// own duplicate of fd, the caller keeps fd.
func MapSharedWindow(fd int, off int64, size int) (*Shared, error) {
	if size <= 0 || off < 0 || off%int64(unix.Getpagesize()) != 0 {
		return nil, fmt.Errorf("memory: map shared window: %d bytes at %d: %w", size, off, ErrInvalidArgument)
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, fmt.Errorf("memory: map shared window: get seals: %v: %w", err, ErrNotSealed)
	}
	if seals&unix.F_SEAL_SHRINK == 0 {
		return nil, fmt.Errorf("memory: map shared window: %w", ErrNotSealed)
	}
	if err := checkBacking(fd); err != nil {
		return nil, fmt.Errorf("memory: map shared window: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("memory: map shared window: fstat: %w", err)
	}
	if off > st.Size || int64(size) > st.Size-off {
		return nil, fmt.Errorf("memory: map shared window: file has %d bytes, want %d at %d: %w", st.Size, size, off, ErrInvalidArgument)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("memory: map shared window: dup: %w", err)
	}
	mem, err := unix.Mmap(dup, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(dup)
		return nil, fmt.Errorf("memory: mmap %d bytes at %d: %w", size, off, err)
	}
	return newShared(mem, dup), nil
}
