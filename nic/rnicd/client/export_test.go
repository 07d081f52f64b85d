// Hooks for the tests that play a broken client: the shared rings of a QP
// and a CQ, the doorbell, and the event registry.

package client

import (
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

// QPRings returns a QP's rings and a function ringing its doorbell.
func QPRings(qp ibv.QP) (*proto.WorkRings, func()) {
	q := qp.(*QP)
	return q.rings, func() { q.d.bell.ring(q.bell) }
}

// CQRing returns a CQ's ring.
func CQRing(cq ibv.CQ) *proto.CQRing { return cq.(*CQ).ring }

// RegisterEvent is registerEvent.
var RegisterEvent = registerEvent

// WorkRingsView is proto.WorkRings, for the tests.
type WorkRingsView = proto.WorkRings

// TrustDaemon is trustDaemon.
var TrustDaemon = trustDaemon
