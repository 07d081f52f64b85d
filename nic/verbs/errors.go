package verbs

import "errors"

// Errors an engine returns to nic so that nic's callers can test them with
// errors.Is (nic re-exports them under the same names).
var (
	// ErrQueueFull: PostSend found max_send_wr WRs outstanding (ENOMEM in
	// ibv_post_send). The engine counts outstanding send WRs because only
	// it knows when one retires (an unsignaled WR completes silently).
	ErrQueueFull = errors.New("work queue full")
	// ErrInvalidState: the QP is not in a state that allows the operation,
	// or it left the state nic validated a transition from.
	ErrInvalidState = errors.New("invalid QP state")
	// ErrNotSupported: a valid verbs feature the engine does not have
	// (EOPNOTSUPP), e.g. a QP type its transport lacks.
	ErrNotSupported = errors.New("not supported")
)
