// Seeded faults on an embedded NIC's kernel UDP link (UDPConfig.Faults):
// transport.WithFaults between the engine and its socket, and the port
// counters that say what was injected.

package embedded

import (
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
)

// withFaults wraps ep in spec's faults; the capture, if any, moves to the
// wrapper, which records the wire as the faults leave it, with a note on
// every frame they touched.
func withFaults(ep transport.Endpoint, spec transport.FaultSpec, w *pcap.Writer) *transport.FaultEndpoint {
	fe := transport.WithFaults(ep, clock.NewReal(), spec.Config())
	if w != nil {
		fe.Capture(w, time.Now)
	}
	return fe
}

// FaultCounters names the counters of injected faults of each direction
// of stats (tx: the frames the NIC sent, rx: those it received), as port
// counters: fault_tx_lost, fault_rx_corrupted...
func FaultCounters(stats func(transport.Direction) transport.Counters) []ibv.Counter {
	var out []ibv.Counter
	for _, d := range []struct {
		name string
		dir  transport.Direction
	}{{"tx", transport.AtoB}, {"rx", transport.BtoA}} {
		c := stats(d.dir)
		out = append(out,
			ibv.Counter{Name: "fault_" + d.name + "_lost", Value: c.Dropped},
			ibv.Counter{Name: "fault_" + d.name + "_duplicated", Value: c.Duplicated},
			ibv.Counter{Name: "fault_" + d.name + "_corrupted", Value: c.Corrupted},
			ibv.Counter{Name: "fault_" + d.name + "_reordered", Value: c.Reordered},
			ibv.Counter{Name: "fault_" + d.name + "_delayed", Value: c.Delayed})
	}
	return out
}
