// Errors of the verbs API. Every backend (the nic object model, the rnicd
// client, passthrough) and every engine returns errors wrapping one of these
// sentinels, so a program tests them with errors.Is whatever device it runs
// on; the errno a libibverbs provider would return is noted on each.

package verbs

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalid: an argument, attribute or work request breaks a verbs
	// rule (EINVAL).
	ErrInvalid = errors.New("invalid argument")
	// ErrBusy: the object is still used by others, e.g. a PD with MRs or
	// QPs, a CQ with QPs (EBUSY).
	ErrBusy = errors.New("resource busy")
	// ErrNoMemory: a device limit (max_qp, max_cq, max_mr, ...) is reached
	// (ENOMEM).
	ErrNoMemory = errors.New("device limit reached")
	// ErrQueueFull: a work queue holds its maximum number of WRs (ENOMEM
	// from ibv_post_send/ibv_post_recv). An engine returns it from
	// PostSend when max_send_wr WRs are outstanding: only the engine knows
	// when one retires (an unsignaled WR completes silently).
	ErrQueueFull = errors.New("work queue full")
	// ErrInvalidState: the QP's state does not allow the operation or the
	// requested transition, or the QP left the state a transition was
	// validated from (EINVAL).
	ErrInvalidState = errors.New("invalid QP state")
	// ErrNotSupported: a valid verbs feature the device does not implement
	// (EOPNOTSUPP), e.g. alternate paths, memory-window binds, or a QP type
	// the engine's transport lacks.
	ErrNotSupported = errors.New("not supported")
	// ErrPermission: the operation needs a privilege the device was not
	// given, e.g. a controlled Q_Key (EPERM).
	ErrPermission = errors.New("permission denied")
	// ErrDestroyed: the object was destroyed, deallocated or deregistered.
	ErrDestroyed = errors.New("object destroyed")
	// ErrNoProvider: no transport engine was attached to the device before
	// CreateQP.
	ErrNoProvider = errors.New("no transport provider")
	// ErrClosed: the device was closed.
	ErrClosed = errors.New("device closed")
	// ErrCQOverrun: the CQ overflowed and is in error (IBV_EVENT_CQ_ERR).
	ErrCQOverrun = errors.New("completion queue overrun")
)

// PostError reports the first work request of a PostSend or PostRecv batch
// that was not posted (ibv_post_send's bad_wr): the WRs before Index were
// posted, this one and the rest were not.
type PostError struct {
	Index int
	WRID  uint64
	Err   error
}

func (e *PostError) Error() string {
	return fmt.Sprintf("work request %d (wr_id %#x) not posted: %v", e.Index, e.WRID, e.Err)
}

func (e *PostError) Unwrap() error { return e.Err }
