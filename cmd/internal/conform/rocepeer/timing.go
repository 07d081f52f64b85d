package rocepeer

import (
	"fmt"
	"time"

	"github.com/rnic/rnic/roce/wire"
)

// AckTimeout is the nominal local ACK timeout of a QP's timeout attribute:
// 4.096 µs × 2^timeout (IBTA Vol 1 §9.7.6.1.3; 0 means no timer).
func AckTimeout(t uint8) time.Duration { return time.Duration(4096<<(t&31)) * time.Nanosecond }

// Timing margins of the requester cases. The spec gives the nominal
// timeout and asks the timer not to fire before it; how late it may fire
// depends on the implementation's timer granularity (rxe's jiffies) and on
// the load of the machine. conform accepts
//
//	[nominal − EarlyJitter, LateFactor × nominal + LateSlack]
//
// EarlyJitter covers the tester's own timestamps (when frames reach the
// tester's host, not when the DUT sent them: over a TAP, when the tester
// reads them); LateSlack covers a scheduler on a busy machine (the
// self-test runs beside busy loops on every core).
const (
	EarlyJitter = time.Millisecond
	LateFactor  = 4
	LateSlack   = 150 * time.Millisecond
)

// Window is an interval of acceptable delays.
type Window struct{ Lo, Hi time.Duration }

// Contains reports whether d lies in the window.
func (w Window) Contains(d time.Duration) bool { return d >= w.Lo && d <= w.Hi }

func (w Window) String() string {
	return fmt.Sprintf("[%v, %v]", w.Lo.Round(10*time.Microsecond), w.Hi.Round(10*time.Microsecond))
}

// Check returns an error saying how d misses the window.
func (w Window) Check(what string, d time.Duration) error {
	switch {
	case d < w.Lo:
		return fmt.Errorf("%s after %v: earlier than the %v the rule allows", what, d.Round(10*time.Microsecond), w.Lo)
	case d > w.Hi:
		return fmt.Errorf("%s after %v: later than the %v allowed", what, d.Round(10*time.Microsecond), w.Hi)
	}
	return nil
}

// AckTimeoutWindow is when a retransmission after a silent responder may
// come for timeout attribute t.
func AckTimeoutWindow(t uint8) Window {
	n := AckTimeout(t)
	return Window{Lo: n - EarlyJitter, Hi: LateFactor*n + LateSlack}
}

// RNRWindow is when the resend after an RNR NAK with timer code c may
// come, timed from when the tester sent the NAK: not before the table's
// delay (§9.7.5.2.8, Table 45; less 0.1 ms for timestamp granularity —
// the NAK's and the resend's transit only add to the measured time), and
// within the same late margin as the ACK timer.
func RNRWindow(c uint8) Window {
	n := wire.RNRDelay(c)
	return Window{Lo: n - EarlyJitter/10, Hi: LateFactor*n + LateSlack}
}
