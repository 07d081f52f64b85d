// Linux backing of Shared: memfd_create + ftruncate + mmap(MAP_SHARED). The
// memfd is sealed against shrinking, and MapShared insists on that seal, so
// no process can truncate the file under the NIC's mapping (an access past
// the end of a truncated file raises SIGBUS).

package memory

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// NewShared creates size bytes of zeroed shared memory: a memfd sealed
// against shrinking, mapped read-write and shared.
func NewShared(size int) (*Shared, error) {
	if size <= 0 {
		return nil, fmt.Errorf("memory: new shared: size %d: %w", size, ErrInvalidArgument)
	}
	fd, err := unix.MemfdCreate("rnic-mr", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memory: memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("memory: ftruncate memfd to %d: %w", size, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("memory: seal memfd: %w", err)
	}
	return mapFd(fd, size)
}

// MapShared maps size bytes of the memory behind fd, typically a memfd
// received from another process that created it with NewShared. fd must be
// sealed against shrinking (F_SEAL_SHRINK) and at least size bytes long.
// MapShared works on its own duplicate of fd; the caller keeps fd.
func MapShared(fd int, size int) (*Shared, error) {
	if size <= 0 {
		return nil, fmt.Errorf("memory: map shared: size %d: %w", size, ErrInvalidArgument)
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, fmt.Errorf("memory: map shared: get seals: %v: %w", err, ErrNotSealed)
	}
	if seals&unix.F_SEAL_SHRINK == 0 {
		return nil, fmt.Errorf("memory: map shared: %w", ErrNotSealed)
	}
	if err := checkBacking(fd); err != nil {
		return nil, fmt.Errorf("memory: map shared: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("memory: map shared: fstat: %w", err)
	}
	if st.Size < int64(size) {
		return nil, fmt.Errorf("memory: map shared: file has %d bytes, want %d: %w", st.Size, size, ErrInvalidArgument)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("memory: map shared: dup: %w", err)
	}
	return mapFd(dup, size)
}

// mapFd maps fd, which it owns from now on.
func mapFd(fd, size int) (*Shared, error) {
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("memory: mmap %d bytes: %w", size, err)
	}
	return newShared(mem, fd), nil
}

func (s *Shared) unmap() error {
	err := unix.Munmap(s.mem)
	registry.mu.Lock()
	fdOpen := !s.fdClosed
	s.fdClosed = true
	registry.mu.Unlock()
	if fdOpen {
		if cerr := unix.Close(s.fd); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("memory: unmap shared: %w", err)
	}
	return nil
}

func closeFd(fd int) error {
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("memory: close shared fd: %w", err)
	}
	return nil
}

// checkBacking insists on shmem (a memfd without MFD_HUGETLB, or a tmpfs
// file): a page of it can always be had again, so an access through the
// mapping never raises SIGBUS. The seal keeps the file from shrinking;
// the backing keeps a punched hole from faulting: hugetlbfs refills one
// from a pool another process may have emptied, and that SIGBUS would
// kill the daemon on a remote peer's RDMA WRITE.
func checkBacking(fd int) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return fmt.Errorf("fstatfs: %w", err)
	}
	if st.Type != unix.TMPFS_MAGIC {
		return fmt.Errorf("%w: filesystem type %#x", ErrBacking, st.Type)
	}
	return nil
}
