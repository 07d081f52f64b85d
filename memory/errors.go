// Sentinel errors of the control path (registration, binding, shared
// memory). Callers test them with errors.Is; the returned errors wrap them
// with the details. The packet path uses Fault codes instead.

package memory

import "errors"

var (
	// ErrInvalidAccess: the access flags are invalid for the operation
	// (ibv_reg_mr/ibv_bind_mw EINVAL on flags, or an MR lacking MWBind or
	// LocalWrite for the window being bound).
	ErrInvalidAccess = errors.New("invalid access flags")
	// ErrInvalidArgument: a bad address range, length, object or state (EINVAL).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrTooLarge: the region exceeds the table's maximum region size.
	ErrTooLarge = errors.New("region too large")
	// ErrNoResources: the table's limit on regions or windows is reached (ENOMEM).
	ErrNoResources = errors.New("no resources")
	// ErrBusy: the object is in use (an MR with bound windows, a bound Type 2B window) (EBUSY).
	ErrBusy = errors.New("resource busy")
	// ErrClosed: the Shared memory was closed.
	ErrClosed = errors.New("shared memory closed")
	// ErrNotSealed: an fd given to MapShared is not sealed against shrinking.
	ErrNotSealed = errors.New("fd not sealed against shrinking")
	// ErrBacking: an fd given to MapShared is not ordinary shared memory
	// (a tmpfs/shmem memfd): hugetlbfs, for one, can take a page away
	// (a punched hole the pool cannot refill) and fault the mapper.
	ErrBacking = errors.New("fd is not backed by ordinary shared memory (tmpfs/shmem)")
)
