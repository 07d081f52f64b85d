// Package transport moves whole Ethernet frames between NICs.
//
// It is the layer below the RoCE engines (nic/README.md, "Layers"): engines
// hand it complete frames (Ethernet/IP/UDP/BTH/...) and get complete frames
// back, and nothing here looks inside them. Keeping the transport blind to RDMA
// headers is what lets the same engine run over a simulated link, a kernel
// socket or a TAP device, and lets fault injection and capture be written
// once, as wrappers around any Endpoint. Capture writing and reading live
// in transport/pcap, apart, so that the engines, which import this package
// for its interfaces, do not link gopacket.
//
// This file holds the vocabulary every transport shares: the Endpoint
// interface, link directions, per-direction counters and common errors.
package transport

import (
	"errors"
	"fmt"
	"time"
)

// Endpoint is one NIC's attachment to a link that carries whole Ethernet
// frames.
//
// Contract for implementations, which engines rely on:
//   - Send never calls a receiver synchronously (neither its own side's nor
//     the peer's), so an engine that sends from inside its receive path is
//     never re-entered.
//   - The receiver is called from one goroutine at a time, never
//     concurrently with itself; it may call Send.
//   - Frames are opaque bytes: an Endpoint never parses or validates them.
type Endpoint interface {
	// Send queues a copy of frame for delivery; the caller may reuse frame
	// after Send returns. Acceptance is not delivery: a frame may still be
	// lost on the way, as on any real wire.
	Send(frame []byte) error
	// SetReceiver installs the function called for each arriving frame; the
	// slice is valid only during the call. A nil receiver discards arrivals.
	SetReceiver(func(frame []byte))
	// Close detaches the endpoint: later Sends fail with ErrClosed and
	// arrivals are discarded. Closing twice is harmless.
	Close() error
}

// BatchSender is implemented by links that can send several frames in one
// call (sendmmsg on a kernel socket): an engine with a burst to send hands
// it over whole. The frames are only read during the call.
type BatchSender interface {
	SendBatch(frames [][]byte) error
}

// BatchEndpoint is an Endpoint that can hand over frames that arrived
// together in one call, so that the receiver can treat them as one burst
// (the RoCE engine answers a burst with one coalesced ACK per QP). Links
// that read in batches (recvmmsg on a kernel socket) implement it; users
// check for it with a type assertion and fall back to SetReceiver.
type BatchEndpoint interface {
	Endpoint
	// SetBatchReceiver installs the function called with each group of
	// frames that arrived together. While it is non-nil it takes the place
	// of the SetReceiver function; the slice and the frames in it are valid
	// only during the call. The same one-goroutine-at-a-time contract as
	// for SetReceiver applies.
	SetBatchReceiver(func(frames [][]byte))
}

// RecvBufferSizer is implemented by links that drop what overflows a
// receive buffer (a kernel socket, without link-level flow control), so
// an engine can keep what it has in flight below that: RecvBufferBytes is
// the buffer's size as the kernel accounts it (SO_RCVBUF as read back,
// which counts each datagram's memory, not only its payload).
type RecvBufferSizer interface {
	RecvBufferBytes() int
}

// ArrivalTimer is implemented by links that can tell when the frame being
// handed to a receiver reached the host (a kernel socket's receive
// timestamp), so a receiver that times a peer is not misled by how late
// its own goroutine ran. Arrival is valid only during a receive callback,
// on the receiver's goroutine, for the frame of that call (in a batch
// receiver: the batch's first frame); it is the zero Time when the link
// does not know.
type ArrivalTimer interface {
	Arrival() time.Time
}

// Backlogger is implemented by a lossless link that knows which frames
// are still on their way (the in-process pipe): a frame it accepted
// reaches the receiver unless an end closes. An engine's retransmission
// timer asks it whether a frame it waits for was lost or is still queued
// behind a receiver that has not run (a starved process), which only the
// link can tell.
type Backlogger interface {
	// Backlog counts the frames this end sent (out) and those sent
	// towards it (in).
	Backlog() (out, in Flow)
}

// Flow counts frames one way along a link: Sent were accepted, Done have
// been through the receiver or will never reach it (its end closed).
type Flow struct{ Sent, Done uint64 }

// ErrClosed is returned by Send on a closed Endpoint.
var ErrClosed = errors.New("transport: endpoint closed")

// ErrEmptyFrame is returned by Send for a zero-length frame, which no wire
// can carry; it always means a bug in the caller.
var ErrEmptyFrame = errors.New("transport: empty frame")

// Direction names one way across a point-to-point link. On a simulated link
// AtoB is the way from the first endpoint NewSimLink returns to the second.
// For WithFaults the wrapped endpoint plays A: AtoB is what it sends, BtoA
// what it receives.
type Direction uint8

const (
	AtoB Direction = iota
	BtoA
)

// String implements fmt.Stringer.
func (d Direction) String() string {
	switch d {
	case AtoB:
		return "A->B"
	case BtoA:
		return "B->A"
	}
	return fmt.Sprintf("Direction(%d)", uint8(d))
}

// Counters describe what happened to the frames sent in one direction.
//
// Once nothing is in flight,
//
//	Sent - Dropped + Duplicated == Delivered + Discarded
//
// holds; tests use it to prove no frame vanished without a reason
// (nic/README.md, principle 4).
type Counters struct {
	Sent       uint64 // frames accepted by Send
	Delivered  uint64 // frame copies handed to the receiving side
	Dropped    uint64 // frames lost (random Loss or a scripted Drop)
	Duplicated uint64 // extra copies made (random Dup or a scripted Duplicate)
	Reordered  uint64 // frames held back so that later frames may overtake them
	Delayed    uint64 // frames given extra delay (random Delay or a scripted Delay)
	Corrupted  uint64 // frames that had one bit flipped
	Replaced   uint64 // frames rewritten by a script
	Discarded  uint64 // copies that arrived but found no receiver, a closed endpoint or a failing inner Send
}
