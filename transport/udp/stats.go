// Counters of an embedded-mode link.
//
// Every frame that does not make it across has a counter saying why
// (nic/README.md, principle 4). The counters are atomics grouped by the
// goroutines that touch them, senders on one cache line and the receive
// loop on another, so that counting does not make the two directions
// contend.

package udp

import "sync/atomic"

// Stats is a snapshot of an Endpoint's counters.
type Stats struct {
	// Sent counts frames the kernel accepted.
	Sent uint64
	// SendErrors counts frames the kernel refused (sendmsg or sendmmsg
	// failed for them); Send or SendBatch returned the error.
	SendErrors uint64
	// SendBatches counts sendmmsg calls made by SendBatch.
	SendBatches uint64
	// Malformed counts outgoing frames refused before reaching the kernel:
	// not Ethernet/IPv4-or-IPv6/UDP, inconsistent lengths, a source address
	// other than the endpoint's, or header fields a kernel socket cannot
	// reproduce (see ErrMalformed and ErrUnrepresentable).
	Malformed uint64
	// Fallbacks counts frames sent from the main socket, with the endpoint's
	// port as UDP source port, because their own source port could not be
	// bound (another socket holds it without SO_REUSEADDR).
	Fallbacks uint64

	// Received counts datagrams turned into frames and handed to a receiver.
	Received uint64
	// Discarded counts datagrams read while no receiver was installed.
	Discarded uint64
	// RecvBatches counts recvmmsg calls that returned at least one datagram.
	RecvBatches uint64
	// Truncated counts datagrams dropped because they did not fit the
	// receive buffer (Config.MaxDatagram).
	Truncated uint64
	// RecvErrors counts failed receive calls, other than the endpoint
	// being closed.
	RecvErrors uint64
	// KernelDrops is the number of datagrams for the listening socket
	// that the kernel dropped (its receive buffer was full, or the UDP
	// checksum was bad), as reported with the latest datagram read
	// (SO_RXQ_OVFL): drops after it show with the next one.
	KernelDrops uint64
	// LoopbackDrops counts frames looped from an endpoint of this
	// process (Config.Loopback) and dropped because the queue standing
	// for the receive buffer was full.
	LoopbackDrops uint64
}

// sendCounters are updated by any goroutine that sends.
type sendCounters struct {
	sent, sendErrors, sendBatches, malformed, fallbacks atomic.Uint64
	_                                                   [24]byte // keep the receive counters off this cache line
}

// recvCounters are updated by the receive loop only.
type recvCounters struct {
	received, discarded, recvBatches, truncated, recvErrors, kernelDrops atomic.Uint64
}

type counters struct {
	send sendCounters
	recv recvCounters
}

func (c *counters) snapshot() Stats {
	return Stats{
		Sent:        c.send.sent.Load(),
		SendErrors:  c.send.sendErrors.Load(),
		SendBatches: c.send.sendBatches.Load(),
		Malformed:   c.send.malformed.Load(),
		Fallbacks:   c.send.fallbacks.Load(),
		Received:    c.recv.received.Load(),
		Discarded:   c.recv.discarded.Load(),
		RecvBatches: c.recv.recvBatches.Load(),
		Truncated:   c.recv.truncated.Load(),
		RecvErrors:  c.recv.recvErrors.Load(),
		KernelDrops: c.recv.kernelDrops.Load(),
	}
}
