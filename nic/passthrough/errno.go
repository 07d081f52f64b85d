//go:build verbs

// errno values from libibverbs and librdmacm as nic's error sentinels, so
// errors.Is(err, verbs.ErrBusy) and the like hold on every backend; the
// errno stays in the chain (errors.Is(err, syscall.EBUSY) holds too).

package passthrough

import "C"

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/rnic/rnic/nic/verbs"
)

// errnoErr converts a verb's return value (an errno, positive or, from
// some providers, negative) into an error.
func errnoErr(r C.int) error {
	return errnoSentinel(errnoOf(r), verbs.ErrNoMemory)
}

// errnoOf is the errno a verb returned, whatever its sign.
func errnoOf(r C.int) syscall.Errno {
	if r < 0 {
		r = -r
	}
	return syscall.Errno(r)
}

// errnoSentinel wraps e with the nic sentinel it means; ENOMEM means
// enomem (a device limit on create, a full queue on post).
func errnoSentinel(e error, enomem error) error {
	var errno syscall.Errno
	if !errors.As(e, &errno) {
		return e
	}
	var s error
	switch errno {
	case 0:
		return fmt.Errorf("unknown failure: %w", verbs.ErrInvalid)
	case syscall.EINVAL:
		s = verbs.ErrInvalid
	case syscall.ENOMEM:
		s = enomem
	case syscall.EBUSY:
		s = verbs.ErrBusy
	case syscall.EOPNOTSUPP, syscall.ENOSYS, syscall.EPROTONOSUPPORT:
		s = verbs.ErrNotSupported
	case syscall.EPERM, syscall.EACCES:
		s = verbs.ErrPermission
	default:
		return errno
	}
	return fmt.Errorf("%w (%w)", s, errno)
}

// cErr is the error of a call that returned NULL or -1 with errno set
// (cgo's second result); a call that failed without errno set says so.
func cErr(err error) error {
	if err == nil {
		return fmt.Errorf("failed without an errno: %w", verbs.ErrInvalid)
	}
	return errnoSentinel(err, verbs.ErrNoMemory)
}
