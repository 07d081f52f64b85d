// The RoCE endpoint: the Host's transport.Endpoint for the RoCEv2 engine.
// Arriving frames to the RoCE UDP port of our addresses are handed over
// whole and unchanged; frames the engine sends get their MACs from the
// neighbour cache.
//
// The engine builds whole Ethernet/IP/UDP/BTH frames (RoCEv2, IBTA Vol 1
// Annex A17.4) with the destination MAC Lookup gave it, or broadcast after
// a miss. The Ethernet header is not covered by the ICRC, so the endpoint
// may set both MACs without resealing the frame; it does so on its own
// copy, never on the caller's slice.

package tap

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/rnic/rnic/transport"
)

// roceEndpoint implements transport.Endpoint on a Host.
type roceEndpoint struct {
	h      *Host
	recv   atomic.Pointer[func([]byte)]
	closed atomic.Bool
}

var _ transport.Endpoint = (*roceEndpoint)(nil)

// Send implements transport.Endpoint. It never calls a receiver: delivery
// is only ever done by the Host's reader.
func (e *roceEndpoint) Send(frame []byte) error {
	h := e.h
	if len(frame) == 0 {
		return transport.ErrEmptyFrame
	}
	if e.closed.Load() {
		return transport.ErrClosed
	}
	if len(frame) > h.mtu+ethHeaderLen {
		h.cnt.tooBig.Add(1)
		return fmt.Errorf("tap: RoCE send: %d-byte frame, MTU %d: %w", len(frame), h.mtu, ErrFrameTooBig)
	}
	var dst netip.Addr
	switch {
	case len(frame) < ethHeaderLen:
	case binary.BigEndian.Uint16(frame[12:]) == etherTypeIPv4 && len(frame) >= ethHeaderLen+ipv4HeaderLen:
		dst = netip.AddrFrom4([4]byte(frame[ethHeaderLen+16 : ethHeaderLen+20]))
	case binary.BigEndian.Uint16(frame[12:]) == etherTypeIPv6 && len(frame) >= ethHeaderLen+ipv6HeaderLen:
		dst = netip.AddrFrom16([16]byte(frame[ethHeaderLen+24 : ethHeaderLen+40]))
	}
	if !dst.IsValid() {
		h.cnt.malformed.Add(1)
		return fmt.Errorf("tap: RoCE send: %w", ErrBadFrame)
	}
	bp := h.getTx()
	defer h.txBuf.Put(bp)
	f := (*bp)[:len(frame)]
	copy(f, frame)
	if err := h.output(f, dst); err != nil {
		return fmt.Errorf("tap: RoCE send: %w", err)
	}
	h.cnt.roceTx.Add(1)
	return nil
}

// SetReceiver implements transport.Endpoint. The receiver runs on the
// Host's reader goroutine, one frame at a time.
func (e *roceEndpoint) SetReceiver(r func([]byte)) {
	if r == nil {
		e.recv.Store(nil)
		return
	}
	e.recv.Store(&r)
}

// Close implements transport.Endpoint: it detaches the receiver and makes
// later Sends fail; the Host keeps running. Closing twice is harmless.
func (e *roceEndpoint) Close() error {
	e.closed.Store(true)
	e.recv.Store(nil)
	return nil
}

// deliver hands an arriving RoCE frame to the receiver.
func (e *roceEndpoint) deliver(frame []byte) {
	r := e.recv.Load()
	if r == nil || e.closed.Load() {
		e.h.cnt.roceNoReceiver.Add(1)
		return
	}
	e.h.cnt.roceRx.Add(1)
	(*r)(frame)
}
