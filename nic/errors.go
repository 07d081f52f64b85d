// nic's errors. Every error nic returns wraps one of the verbs.Err*
// sentinels (test with errors.Is) and says which object and which rule
// failed.

package nic

import (
	"fmt"

	"github.com/rnic/rnic/nic/verbs"
)

// AttrError is a rejected QP attribute in ibv_modify_qp: missing although
// the transition requires it, present although the transition does not
// allow it, or out of range. It unwraps to verbs.ErrInvalid (or
// verbs.ErrNotSupported, verbs.ErrPermission).
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

// errorf wraps sentinel with a "nic: " message.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("nic: "+format+": %w", append(args, sentinel)...)
}
