// Status codes of replies: the verbs sentinel errors (nic's, which an
// ibv.Device returns) as numbers, so that a client's errors.Is works as it
// does on an in-process NIC, plus rnicd's own.

package proto

import (
	"errors"
	"fmt"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// Status is a reply's outcome.
type Status uint32

// Statuses. The nic ones map to the sentinel of the same name.
const (
	StatusOK Status = iota
	StatusInvalid
	StatusBusy
	StatusNoMemory
	StatusQueueFull
	StatusInvalidState
	StatusNotSupported
	StatusPermission
	StatusDestroyed
	StatusNoProvider
	StatusClosed
	StatusCQOverrun
	// StatusLimit: a per-client limit of the daemon (ErrLimit, and
	// verbs.ErrNoMemory as a device limit would be).
	StatusLimit
	// StatusBadMessage: the request was malformed (ErrMalformed).
	StatusBadMessage
	// StatusUnknownOp: the daemon does not implement the op
	// (verbs.ErrNotSupported).
	StatusUnknownOp
	// StatusNoDevice: no device of that name, or none opened yet.
	StatusNoDevice
	// StatusBadHandle: no object of that kind with that handle in this
	// connection (verbs.ErrInvalid).
	StatusBadHandle
	// StatusVersion: the client speaks another protocol version.
	StatusVersion
	// StatusInternal: anything else; the message says what.
	StatusInternal
	// StatusRejected: the peer rejected an rdma_cm connection
	// (ibv.ErrRejected).
	StatusRejected
	// StatusUnreachable: a UD rdma_cm resolve got a negative SIDR_REP
	// (ibv.ErrUnreachable).
	StatusUnreachable
	// StatusAddrNotAvail: an rdma_cm bind overlaps a wildcard bind of the
	// port (ErrAddrNotAvail: the kernel's EADDRNOTAVAIL, where a bind of
	// the same address is EADDRINUSE, StatusBusy).
	StatusAddrNotAvail
)

// Errors of rnicd itself.
var (
	// ErrLimit: a per-client limit of the daemon was reached.
	ErrLimit = errors.New("rnicd: per-client limit reached")
	// ErrNoDevice: the daemon serves no device of that name.
	ErrNoDevice = errors.New("rnicd: no such device")
	// ErrBadHandle: the handle names no object of this connection.
	ErrBadHandle = errors.New("rnicd: no such object")
	// ErrVersion: client and daemon speak different protocol versions.
	ErrVersion = errors.New("rnicd: protocol version mismatch")
	// ErrAddrNotAvail: an rdma_cm port is bound to the wildcard address,
	// or a bind to it is refused because the port is bound already.
	ErrAddrNotAvail = errors.New("rnicd: rdma_cm address not available")
)

// sentinels maps each status to the errors a client's error wraps.
var sentinels = [...][]error{
	StatusInvalid:      {verbs.ErrInvalid},
	StatusBusy:         {verbs.ErrBusy},
	StatusNoMemory:     {verbs.ErrNoMemory},
	StatusQueueFull:    {verbs.ErrQueueFull},
	StatusInvalidState: {verbs.ErrInvalidState},
	StatusNotSupported: {verbs.ErrNotSupported},
	StatusPermission:   {verbs.ErrPermission},
	StatusDestroyed:    {verbs.ErrDestroyed},
	StatusNoProvider:   {verbs.ErrNoProvider},
	StatusClosed:       {verbs.ErrClosed},
	StatusCQOverrun:    {verbs.ErrCQOverrun},
	StatusLimit:        {ErrLimit, verbs.ErrNoMemory},
	StatusBadMessage:   {ErrMalformed, verbs.ErrInvalid},
	StatusUnknownOp:    {verbs.ErrNotSupported},
	StatusNoDevice:     {ErrNoDevice},
	StatusBadHandle:    {ErrBadHandle, verbs.ErrInvalid},
	StatusVersion:      {ErrVersion},
	StatusInternal:     nil,
	StatusRejected:     {ibv.ErrRejected},
	StatusUnreachable:  {ibv.ErrUnreachable},
	StatusAddrNotAvail: {ErrAddrNotAvail, verbs.ErrBusy},
}

// StatusOf returns the status for err (StatusOK for nil): a RemoteError's
// own, else that of the first sentinel err wraps, rnicd's own before
// nic's, so an error wrapping both ErrLimit and verbs.ErrNoMemory reports
// StatusLimit.
func StatusOf(err error) Status {
	if err == nil {
		return StatusOK
	}
	var re *RemoteError
	if errors.As(err, &re) {
		return re.Status
	}
	// rnicd's own first: they are the more specific.
	for _, s := range []Status{StatusLimit, StatusBadHandle, StatusNoDevice, StatusVersion, StatusBadMessage, StatusRejected, StatusUnreachable, StatusAddrNotAvail} {
		if errors.Is(err, sentinels[s][0]) {
			return s
		}
	}
	for s := StatusInvalid; s <= StatusCQOverrun; s++ {
		if errors.Is(err, sentinels[s][0]) {
			return s
		}
	}
	// memory's errors reach an ibv caller wrapped in nic's except from
	// paths that call memory directly (mapping a client's memfd).
	switch {
	case errors.Is(err, memory.ErrNoResources):
		return StatusNoMemory
	case errors.Is(err, memory.ErrBusy):
		return StatusBusy
	case errors.Is(err, memory.ErrInvalidArgument), errors.Is(err, memory.ErrInvalidAccess),
		errors.Is(err, memory.ErrNotSealed), errors.Is(err, memory.ErrTooLarge), errors.Is(err, memory.ErrClosed):
		return StatusInvalid
	}
	return StatusInternal
}

// RemoteError is an error the daemon replied with. It unwraps to the
// sentinels of its status.
type RemoteError struct {
	Op     Op
	Status Status
	Msg    string
}

func (e *RemoteError) Error() string { return "rnicd: " + e.Msg }

// Unwrap returns the sentinel errors of the status.
func (e *RemoteError) Unwrap() []error {
	if int(e.Status) < len(sentinels) {
		return sentinels[e.Status]
	}
	return nil
}

// ErrorOf returns the error a reply with status s and message msg stands
// for, nil for StatusOK.
func ErrorOf(op Op, s Status, msg string) error {
	if s == StatusOK {
		return nil
	}
	if msg == "" {
		msg = fmt.Sprintf("%v failed with status %d", op, s)
	}
	return &RemoteError{Op: op, Status: s, Msg: msg}
}
