// A failed iWARP connect in ibv's terms: a rejection is ibv.ErrRejected
// with its detail, as rdma_cm's RDMA_CM_EVENT_REJECTED gives it.

package embedded

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/nic/ibv"
)

// rejectConsumer is the reason an MPA reject reports: MPA has no reason
// field, and a Reply with R is always the listening consumer's refusal,
// which IB's REJ calls "consumer reject" (IBTA Vol 1 table 112: 28).
const rejectConsumer = 28

// IWARPRejectError is a connection the peer refused with an MPA Reply
// carrying R (RFC 5044 §7.1.3). It is ibv.ErrRejected and the engine's
// iwarp.ErrRejected, and an ibv.RejectDetail.
type IWARPRejectError struct {
	Remote      netip.AddrPort
	PrivateData []byte // the rejecter's
	err         error  // the engine's
}

func (e *IWARPRejectError) Error() string {
	return fmt.Sprintf("embedded: iWARP connect to %v: %v", e.Remote, e.err)
}

// Unwrap gives both ibv.ErrRejected (for programs of any backend) and the
// engine's error.
func (e *IWARPRejectError) Unwrap() []error { return []error{ibv.ErrRejected, e.err} }

// RejectReason and RejectPrivateData make it an ibv.RejectDetail.
func (e *IWARPRejectError) RejectReason() uint16      { return rejectConsumer }
func (e *IWARPRejectError) RejectPrivateData() []byte { return e.PrivateData }

// connectError is r's failure as CMConnect returns it.
func connectError(remote netip.AddrPort, r iwarp.ConnectResult) error {
	if errors.Is(r.Err, iwarp.ErrRejected) {
		return &IWARPRejectError{Remote: remote, PrivateData: r.PrivateData, err: r.Err}
	}
	return fmt.Errorf("embedded: iWARP connect to %v: %w", remote, r.Err)
}
