package cm

import (
	"errors"
	"fmt"
)

// ErrDeferRTU, returned by a handler for EventREP, leaves the ID in
// REP_RCVD without sending the RTU: the consumer moves its QP itself (an
// rdma_cm id without a QP of its own, RDMA_CM_EVENT_CONNECT_RESPONSE) and
// calls Establish when it is ready.
var ErrDeferRTU = errors.New("cm: RTU deferred to Establish")

// Establish sends the RTU an EventREP handler deferred (rdma_establish)
// and delivers EventEstablished.
func (id *ID) Establish() error {
	m := id.m
	m.mu.Lock()
	if id.state != StateREPRcvd {
		st := id.state
		m.mu.Unlock()
		return fmt.Errorf("%w: establish in %v", ErrState, st)
	}
	if !id.sendRTU() {
		m.mu.Unlock()
		return fmt.Errorf("cm: RTU: %w", ErrBadField)
	}
	h := id.handler
	m.mu.Unlock()
	if h != nil {
		h(Event{Type: EventEstablished, ID: id})
	}
	return nil
}
