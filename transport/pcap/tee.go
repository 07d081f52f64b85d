// Tee: capture at a NIC's port.
//
// Wrapping an Endpoint records what that NIC sent and received, the view a
// tcpdump on the NIC's interface gives, whatever the transport underneath
// (simulated link, UDP socket, TAP). This is how loopback and kernel-socket
// runs still produce a pcap with every frame.

package pcap

import (
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/transport"
)

// teeEndpoint records every frame crossing ep.
type teeEndpoint struct {
	ep   transport.Endpoint
	w    *Writer
	now  func() time.Time
	recv atomic.Pointer[func([]byte)]
	// closed stops recording sends once the tee is closed: they can only
	// fail with transport.ErrClosed, never reach a wire.
	closed atomic.Bool
}

// Tee returns a transport.Endpoint that behaves like ep and writes to w every
// frame sent through it and every frame it receives, each recorded at the
// moment it crosses the port and stamped under w's lock
// (Writer.WriteFrameNow): a frame sent is recorded before ep sees it, a frame
// received before the receiver does. So nothing that answers a frame (an ACK,
// a READ response, in this process or in a peer that sees the frame the
// instant ep sends it) can be recorded before it, and the timestamps never
// decrease. A frame ep then refuses (a full socket buffer, a frame a kernel
// socket cannot reproduce) stays in the capture as a frame lost on the wire,
// as the simulated link records its lost frames. now supplies the timestamps:
// time.Now on a real wire, transport.VirtualTimestamps(clk) in a simulation.
// Install receivers on the tee, not on ep, from then on. Capture errors do
// not disturb traffic: they are sticky in w and reported by its Close.
// Closing the tee closes ep but not w, which may be shared.
//
// When ep delivers in batches (transport.BatchEndpoint), so does the tee.
func Tee(ep transport.Endpoint, w *Writer, now func() time.Time) transport.Endpoint {
	t := &teeEndpoint{ep: ep, w: w, now: now}
	if be, ok := ep.(transport.BatchEndpoint); ok {
		bt := &batchTee{teeEndpoint: t}
		be.SetBatchReceiver(bt.arriveBatch)
		return bt
	}
	ep.SetReceiver(t.arrive)
	return t
}

// batchTee is a tee over a transport.BatchEndpoint.
type batchTee struct {
	*teeEndpoint
	brecv atomic.Pointer[func([][]byte)]
}

func (t *batchTee) arriveBatch(frames [][]byte) {
	_ = t.w.WriteFramesNow(t.now, frames)
	if r := t.brecv.Load(); r != nil && *r != nil {
		(*r)(frames)
		return
	}
	if r := t.recv.Load(); r != nil && *r != nil {
		for _, f := range frames {
			(*r)(f)
		}
	}
}

// SetBatchReceiver implements transport.BatchEndpoint.
func (t *batchTee) SetBatchReceiver(f func(frames [][]byte)) { t.brecv.Store(&f) }

// Send implements transport.Endpoint. The frame is recorded before ep gets it
// (see Tee); an empty frame, which every Endpoint refuses, and a frame sent
// after Close are not.
func (t *teeEndpoint) Send(frame []byte) error {
	if len(frame) > 0 && !t.closed.Load() {
		_ = t.w.WriteFrameNow(t.now, frame)
	}
	return t.ep.Send(frame)
}

// SendBatch sends frames through ep's own SendBatch when it has one, else
// one by one, and records them first, as Send does.
func (t *teeEndpoint) SendBatch(frames [][]byte) error {
	bs, ok := t.ep.(transport.BatchSender)
	if !ok {
		for _, f := range frames {
			if err := t.Send(f); err != nil {
				return err
			}
		}
		return nil
	}
	if !t.closed.Load() {
		_ = t.w.WriteFramesNow(t.now, frames)
	}
	return bs.SendBatch(frames)
}

func (t *teeEndpoint) arrive(frame []byte) {
	_ = t.w.WriteFrameNow(t.now, frame)
	if r := t.recv.Load(); r != nil && *r != nil {
		(*r)(frame)
	}
}

// SetReceiver implements transport.Endpoint.
func (t *teeEndpoint) SetReceiver(f func(frame []byte)) { t.recv.Store(&f) }

// Close implements transport.Endpoint.
func (t *teeEndpoint) Close() error {
	t.closed.Store(true)
	return t.ep.Close()
}
