// Fault codes: the result of every check on the packet path. They are plain
// values rather than errors so that a rejected access costs no allocation;
// the engines map them to NAK codes, Terminate messages, completion statuses
// and counters.

package memory

import "strconv"

// Fault is the outcome of a memory check; Ok means the access may proceed.
type Fault uint8

// Fault codes.
const (
	Ok               Fault = iota // access allowed
	BadKey                        // no such key, stale key byte, or a key of the wrong kind (MW key as lkey)
	BadPD                         // the key belongs to another protection domain
	BadQP                         // a Type 2B window used through a QP it is not bound to
	NoAccess                      // the region or window lacks a needed access flag
	OutOfBounds                   // the range is not entirely inside the region or window (incl. va+len overflow)
	Misaligned                    // an atomic on an address that is not 8-byte aligned
	Invalidated                   // the key names a region or window that was invalidated and not re-registered
	CannotInvalidate              // Invalidate refused: ordinary MR, Type 1 window, or MR with bound windows
)

var faultNames = [...]string{
	Ok:               "ok",
	BadKey:           "bad key",
	BadPD:            "protection domain mismatch",
	BadQP:            "window bound to another QP",
	NoAccess:         "access not permitted",
	OutOfBounds:      "out of bounds",
	Misaligned:       "misaligned atomic",
	Invalidated:      "invalidated key",
	CannotInvalidate: "key cannot be invalidated",
}

// String returns a short human-readable description of f.
func (f Fault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "fault(" + strconv.Itoa(int(f)) + ")"
}
