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

// ForgetChunks makes the device forget the ring chunks it mapped (they
// stay mapped), as a client that missed their memfds.
func ForgetChunks(dev ibv.Device) int {
	d := deviceOf(dev)
	d.arena.mu.Lock()
	defer d.arena.mu.Unlock()
	n := len(d.arena.chunks)
	clear(d.arena.chunks)
	return n
}

func deviceOf(dev ibv.Device) *Device {
	switch d := dev.(type) {
	case *Device:
		return d
	case deviceNet:
		return d.Device
	case deviceCM:
		return d.Device
	case deviceNetCM:
		return d.Device
	}
	panic("not an rnicd device")
}
