// A warning for a TAP whose namespace has its loopback down
// (tap/device_lo.go): the README's recipe once left it so, and
// ibv_rc_pingpong aimed at the bridge's address hung.

package main

import "fmt"

// loopbackWarning is a warning when the TAP's namespace has lo down, "" if
// not: programs there cannot reach its own addresses (tap/device_lo.go),
// and a pingpong between two of them hangs.
func (d *device) loopbackWarning() string {
	if d.tap == nil || !d.tap.TAP().LoopbackDown() {
		return ""
	}
	return fmt.Sprintf("rnicd: warning: namespace %s has lo down, so programs in it cannot reach its own addresses "+
		"(a TCP exchange with the bridge's address hangs): ip -n %s link set lo up", d.spec.Netns, d.spec.Netns)
}
