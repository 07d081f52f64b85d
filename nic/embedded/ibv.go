// The assembled NIC as an ibv.Device, for programs written against the
// backend-neutral API.

package embedded

import (
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
)

// PortCounters returns the RoCE engine's counters (rdma statistic's
// names) as the port's, and on a kernel UDP link the link's own losses:
// datagrams the kernel dropped because the socket's receive buffer was
// full (udp_rcvbuf_drops), datagrams too long to read whole
// (udp_truncated) and failed sends and receives.
func (n *NIC) PortCounters() []ibv.Counter {
	snap := n.Stack.Counters().Snapshot()
	out := make([]ibv.Counter, len(snap), len(snap)+4)
	for i, c := range snap {
		out[i] = ibv.Counter{Name: c.Name, Value: c.Value}
	}
	if n.udp != nil {
		st := n.udp.Stats()
		out = append(out, ibv.Counter{Name: "udp_rcvbuf_drops", Value: st.KernelDrops + st.LoopbackDrops},
			ibv.Counter{Name: "udp_truncated", Value: st.Truncated},
			ibv.Counter{Name: "udp_send_errors", Value: st.SendErrors},
			ibv.Counter{Name: "udp_recv_errors", Value: st.RecvErrors})
	}
	if n.faults != nil {
		out = append(out, FaultCounters(n.faults.Stats)...)
	}
	return out
}

// Verbs returns n as an ibv.Device. opt's Counters default to
// PortCounters and its Close to n.Close.
func (n *NIC) Verbs(opt nic.IBVOptions) ibv.Device {
	if opt.Counters == nil {
		opt.Counters = n.PortCounters
	}
	if opt.Close == nil {
		opt.Close = n.Close
	}
	return nic.AsIBV(n.Device, opt)
}
