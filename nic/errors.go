// Errors of the verbs API. Every error nic returns wraps one of the
// sentinels below (test with errors.Is) and says which object and which rule
// failed; the errno a libibverbs provider would return is noted on each.

package nic

import (
	"errors"
	"fmt"

	"github.com/rnic/rnic/nic/verbs"
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
	// from ibv_post_send/ibv_post_recv). The same value as
	// verbs.ErrQueueFull, which engines return.
	ErrQueueFull = verbs.ErrQueueFull
	// ErrInvalidState: the QP's state does not allow the operation or the
	// requested transition (EINVAL). The same value as
	// verbs.ErrInvalidState.
	ErrInvalidState = verbs.ErrInvalidState
	// ErrNotSupported: a valid verbs feature rnic does not implement
	// (EOPNOTSUPP), e.g. alternate paths or memory-window binds. The same
	// value as verbs.ErrNotSupported, which engines return.
	ErrNotSupported = verbs.ErrNotSupported
	// ErrPermission: the operation needs a privilege the device was not
	// given, e.g. a controlled Q_Key (EPERM).
	ErrPermission = errors.New("permission denied")
	// ErrDestroyed: the object was destroyed, deallocated or deregistered.
	ErrDestroyed = errors.New("object destroyed")
	// ErrNoProvider: no transport engine was attached (Config.Provider or
	// Device.SetProvider) before CreateQP.
	ErrNoProvider = errors.New("no transport provider")
	// ErrClosed: the device was closed.
	ErrClosed = errors.New("device closed")
	// ErrCQOverrun: the CQ overflowed and is in error (IBV_EVENT_CQ_ERR).
	ErrCQOverrun = errors.New("completion queue overrun")
)

// AttrError is a rejected QP attribute in ibv_modify_qp: missing although
// the transition requires it, present although the transition does not
// allow it, or out of range. It unwraps to ErrInvalid (or ErrNotSupported,
// ErrPermission).
type AttrError struct {
	QPN      uint32
	Type     verbs.QPType
	From, To verbs.QPState
	Attr     verbs.QPAttrMask // the single attribute at fault
	Reason   string
	Err      error
}

func (e *AttrError) Error() string {
	return fmt.Sprintf("nic: modify %v QP %#x %v→%v: attribute %s: %s: %v",
		e.Type, e.QPN, e.From, e.To, AttrName(e.Attr), e.Reason, e.Err)
}

func (e *AttrError) Unwrap() error { return e.Err }

// PostError reports the first work request of a PostSend or PostRecv batch
// that was not posted (ibv_post_send's bad_wr): the WRs before Index were
// posted, this one and the rest were not.
type PostError struct {
	Index int
	WRID  uint64
	Err   error
}

func (e *PostError) Error() string {
	return fmt.Sprintf("nic: work request %d (wr_id %#x) not posted: %v", e.Index, e.WRID, e.Err)
}

func (e *PostError) Unwrap() error { return e.Err }

// errorf wraps sentinel with a "nic: " message.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("nic: "+format+": %w", append(args, sentinel)...)
}
