// The assembled NIC as an ibv.Device, for programs written against the
// backend-neutral API.

package embedded

import "github.com/rnic/rnic/nic/ibv"

// PortCounters returns the RoCE engine's counters (rdma statistic's
// names) as the port's.
func (n *NIC) PortCounters() []ibv.Counter {
	snap := n.Stack.Counters().Snapshot()
	out := make([]ibv.Counter, len(snap))
	for i, c := range snap {
		out[i] = ibv.Counter{Name: c.Name, Value: c.Value}
	}
	return out
}

// Verbs returns n as an ibv.Device. opt's Counters default to
// PortCounters and its Close to n.Close.
func (n *NIC) Verbs(opt ibv.LocalOptions) ibv.Device {
	if opt.Counters == nil {
		opt.Counters = n.PortCounters
	}
	if opt.Close == nil {
		opt.Close = n.Close
	}
	return ibv.Local(n.Device, opt)
}
