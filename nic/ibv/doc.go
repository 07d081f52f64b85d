// Package ibv is rnic's verbs API as an interface, so one program runs on
// any backend by changing its device string (ibv_open_device by name):
//
//	rnic0                          the in-process NIC (embedded, simulated or TAP mode): nic.AsIBV
//	rnic0@/run/rnic/rnicd.sock     a NIC served by rnicd to co-located processes (nic/rnicd/client)
//	verbs:rxe0, verbs:mlx5_0       real RDMA hardware (or rxe/siw) through libibverbs (nic/passthrough)
//
// The interfaces follow libibverbs: a Device creates protection domains,
// memory regions, completion queues, shared receive queues, queue pairs and
// address handles; work requests, completions, QP attributes and async
// events are the verbs types of nic/verbs, whatever the backend. Objects
// given to a Device (a PD to RegMR, CQs in QPInit) must come from the same
// Device.
//
// Memory: a backend may DMA only into memory it can reach. In-process any
// []byte will do; rnicd needs memory the daemon can map (a memfd), and
// libibverbs memory outside the Go heap. Device.AllocBuffer returns memory
// every backend accepts, so portable programs allocate their buffers with it.
//
// Optional capabilities are separate interfaces a Device may implement:
// Network (the TCP/IP stack that owns the device's addresses, for side
// channels), Counters (the port's counters, as rdma statistic shows).
// Objects have theirs too: McastQP (ibv_attach_mcast) on a QP of a device
// whose max_mcast_grp is not 0, ResizeCQ, ReregMR, SRQModifier.
package ibv
