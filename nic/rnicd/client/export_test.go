// Hooks for the tests that play a broken client: the shared rings of a QP
// and a CQ, the doorbell, and the event registry.

package client

import (
	"testing"

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

// Call makes a control call of op on dev's connection (tests of the read
// path with a scripted daemon).
func Call(dev ibv.Device, op proto.Op, req, resp proto.Message) error {
	_, err := deviceOf(dev).call(op, req, nil, resp)
	return err
}

// SetBeforeHandBack makes f run whenever a holder of the read token is
// about to give it up, until the test ends.
func SetBeforeHandBack(t testing.TB, f func()) {
	beforeHandBack = f
	t.Cleanup(func() { beforeHandBack = nil })
}

// PollForReplies makes dev's calls poll for their replies, as with a
// daemon in another process (before the calls that need it).
func PollForReplies(dev ibv.Device) { deviceOf(dev).spin = true }

// EventsOverflowed is how many events the device dropped because its
// events channel was full (a reader that did not keep up).
func EventsOverflowed(dev ibv.Device) uint64 { return deviceOf(dev).overflow.Load() }
