// What a stalled receiver can say about where messages went: the NIC's
// counters of messages dropped on the way in (a UD datagram has no
// retransmission, so a lost one leaves the server waiting).

package perf

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rnic/rnic/nic/ibv"
)

// lossCounters are the port counters that count incoming messages
// dropped: no receive WQE posted, too long for it, a wrong Q_Key, a QP
// not receiving, and the embedded link's kernel socket overflowing.
var lossCounters = []string{"rcv_no_buf", "ud_too_long", "qkey_violation", "qp_not_ready",
	"udp_rcvbuf_drops", "udp_truncated"}

// losses returns dev's nonzero loss counters as "name=value ...", or
// "no loss counted" ("" if dev reports no counters).
func losses(dev ibv.Device) string {
	cs, ok := dev.(ibv.Counters)
	if !ok {
		return ""
	}
	var b strings.Builder
	for _, c := range cs.Counters() {
		for _, name := range lossCounters {
			if c.Name == name && c.Value != 0 {
				fmt.Fprintf(&b, " %s=%d", c.Name, c.Value)
			}
		}
	}
	if b.Len() == 0 {
		return "no loss counted"
	}
	return "NIC counters:" + b.String()
}

// stalledReceiving adds to a receiver's stall how many messages came and
// the NIC's loss counters.
func (s *side) stalledReceiving(err error, got, total int) error {
	if !errors.Is(err, ErrStalled) {
		return err
	}
	if l := losses(s.dev); l != "" {
		return fmt.Errorf("%w (received %d of %d messages; %s)", err, got, total, l)
	}
	return fmt.Errorf("%w (received %d of %d messages)", err, got, total)
}
