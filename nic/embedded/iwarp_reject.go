// A failed iWARP connect in ibv's terms: a rejection is ibv.ErrRejected
// with its detail, as rdma_cm's RDMA_CM_EVENT_REJECTED gives it.

package embedded

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/transport/stream"
)

// rejectConsumer is the reason (IB's REJ, IBTA Vol 1 table 112, which
// ibv.RejectDetail speaks) of an MPA Reply with R: MPA has no reason
// field, and such a Reply is always the listening consumer's refusal,
// "consumer reject". A refused TCP connection is ibv.RejectNoListener.
const rejectConsumer = 28

// IWARPRejectError is a connection the peer refused: with an MPA Reply
// carrying R (RFC 5044 §7.1.3), or by refusing the TCP connection (no
// listener; the kernel's iWARP CM reports both as
// RDMA_CM_EVENT_REJECTED). It is ibv.ErrRejected and the engine's error
// (iwarp.ErrRejected, or the stream's ErrRefused), and an
// ibv.RejectDetail.
type IWARPRejectError struct {
	Remote      netip.AddrPort
	PrivateData []byte // the rejecter's
	Reason      uint16 // rejectConsumer or ibv.RejectNoListener
	err         error  // the engine's
}

func (e *IWARPRejectError) Error() string {
	return fmt.Sprintf("embedded: iWARP connect to %v: %v", e.Remote, e.err)
}

// Unwrap gives both ibv.ErrRejected (for programs of any backend) and the
// engine's error.
func (e *IWARPRejectError) Unwrap() []error { return []error{ibv.ErrRejected, e.err} }

// RejectReason and RejectPrivateData make it an ibv.RejectDetail.
func (e *IWARPRejectError) RejectReason() uint16      { return e.Reason }
func (e *IWARPRejectError) RejectPrivateData() []byte { return e.PrivateData }

// connectError is r's failure as CMConnect returns it.
func connectError(remote netip.AddrPort, r iwarp.ConnectResult) error {
	switch {
	case errors.Is(r.Err, iwarp.ErrRejected):
		return &IWARPRejectError{Remote: remote, PrivateData: r.PrivateData, Reason: rejectConsumer, err: r.Err}
	case errors.Is(r.Err, stream.ErrRefused):
		return &IWARPRejectError{Remote: remote, Reason: ibv.RejectNoListener, err: r.Err}
	}
	return fmt.Errorf("embedded: iWARP connect to %v: %w", remote, r.Err)
}
