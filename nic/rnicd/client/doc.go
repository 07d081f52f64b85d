// Package client is the verbs API of a NIC that rnicd serves: an ibv.Device
// whose objects live in the daemon and whose data plane is shared memory,
// so a program runs against rnicd by changing its device string to
// NAME@SOCKET (ibv.Open, once this package is linked).
//
//	dev, err := ibv.Open(ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic0", Socket: "/run/rnic/rnicd.sock"})
//	buf, _ := dev.AllocBuffer(1 << 20) // a sealed memfd the daemon maps
//	mr, _ := dev.RegMR(pd, buf.Bytes(), access)
//
// Control verbs (create, modify, query, destroy) are round trips on the
// control socket. PostSend, PostRecv and Poll are not: a WQE is written
// into the QP's send or receive ring and the producer index published,
// with a doorbell (a bit in the session's doorbell, one byte sent)
// only when the daemon's drainer sleeps; completions are read from the
// CQ's ring. None allocates. Completion events of every CQ come through
// the session's one completion channel (channel.go, protocol 6): a CQ
// costs no descriptor and no goroutine.
//
// Memory: RegMR takes only memory from AllocBuffer (the daemon must be
// able to map it); MRs are registered at the buffer's own addresses, so
// SGEs, remote addresses and rkeys are what they would be in-process.
//
// Differences from an in-process NIC, all at the margins:
//   - A send or receive queue is full (ErrQueueFull) when the client's ring
//     is: the ring holds max_send_wr (max_recv_wr) WQEs the daemon has not
//     taken yet, the daemon a batch of 16 the NIC has not, and the NIC's
//     own queue max_send_wr: up to twice the depth and 16 can be
//     outstanding before PostSend fails.
//   - A CQ holds cqe completions in its ring and cqe more in the daemon
//     before it overruns.
//   - Once a CQ was armed for solicited completions only (until it is
//     armed for any again), the daemon moves unsolicited ones into the ring
//     on a timer (100 µs to 10 ms) rather than at once. ReqNotify that
//     switches between the two kinds of arm is a round trip.
//   - A completion that reaches the daemon's CQ exactly while it re-arms
//     for solicited completions cannot be classified and fires a
//     solicited-only arm (a spurious event, never a lost one).
//   - A WQE the client wrote but the NIC refuses (only a broken client
//     produces one: PostSend checks what nic checks) moves the QP to ERR
//     with QP_FATAL instead of failing PostSend.
//
// When the daemon goes away (restart, crash), every verb fails with an
// error wrapping ErrDaemonGone, blocked calls return it, Notify channels
// and the Events channel close, and Poll returns 0.
package client
