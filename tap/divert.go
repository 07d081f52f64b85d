// Divert: a hook on the receive path that sees every frame read from the
// wire before the host stack does, and may take it away (a host port: the
// frames that are not the NIC's business go to a kernel behind another TAP,
// nic/tapnic/hostport.go). WriteWire is the other direction: a frame that
// did not come from the host stack, sent onto the wire as it is.
//
//	wire ─► read ─► pcap ─► Divert ─┬─ keep ─► process (ARP, ND, ICMP, RoCE, TCP)
//	                                └─ taken (the diverter forwarded it)
//	elsewhere ─► WriteWire ─► pcap ─► wire
//
// Frames the host stack turns around (loopback.go) never reach the
// diverter: they never were on the wire.

package tap

import "fmt"

// Diverter sees each frame read from the wire, behind its virtio_net_hdr
// v (the zero VnetHdr on a plain IO). On an offload IO the frame is as the
// kernel gave it: a partial checksum is not finished yet, and it may be a
// TCP super-segment. It returns whether the host stack still handles the
// frame; it may not keep frame, and runs on the reader goroutine, so it
// must not block.
type Diverter func(frame []byte, v VnetHdr) (keep bool)

// SetDivert installs d (nil removes it). A frame a diverter takes is still
// counted in rx_frames and rx_bytes and recorded in the capture: it was
// read from the wire.
func (h *Host) SetDivert(d Diverter) {
	if d == nil {
		h.divert.Store(nil)
		return
	}
	h.divert.Store(&d)
}

// diverted offers a frame read from the wire (counted and recorded
// already) to the diverter and reports whether it took it.
func (h *Host) diverted(frame []byte, v VnetHdr) bool {
	dp := h.divert.Load()
	return dp != nil && !(*dp)(frame, v)
}

// handleWireFrame is the receive path of a plain IO: the frame is counted
// and recorded, then offered to the diverter, then to the host stack.
func (h *Host) handleWireFrame(b []byte) {
	h.arrived(b, VnetHdr{})
	if h.diverted(b, VnetHdr{}) {
		return
	}
	h.process(b, false)
}

// WriteWire sends frame, a whole Ethernet frame from elsewhere (a host
// port), onto the wire unchanged, behind its virtio_net_hdr v. On a plain
// IO a partial checksum is finished first and a super-segment is refused
// (ErrFrameTooBig): only an offload IO hands the kernel super-segments.
// It may modify frame (the checksum). It is counted in tx_frames and
// tx_bytes and recorded in the capture like the host stack's own frames.
func (h *Host) WriteWire(frame []byte, v VnetHdr) error {
	if h.isClosed() {
		return ErrHostClosed
	}
	if len(frame) < ethHeaderLen || v.check(frame) != nil {
		h.cnt.malformed.Add(1)
		return fmt.Errorf("tap: WriteWire: %w", ErrBadFrame)
	}
	if h.vio == nil {
		if v.GSOType != vnetGSONone {
			h.cnt.tooBig.Add(1)
			return fmt.Errorf("tap: WriteWire: a super-segment on a TAP without offload: %w", ErrFrameTooBig)
		}
		if v.Flags&vnetFlagNeedsCsum != 0 {
			finishChecksum(frame, v)
		}
		v = VnetHdr{}
	}
	if v.GSOType == vnetGSONone && len(frame) > h.mtu+ethHeaderLen+4 {
		h.cnt.tooBig.Add(1)
		return fmt.Errorf("tap: WriteWire: %d-byte frame, MTU %d: %w", len(frame), h.mtu, ErrFrameTooBig)
	}
	return h.writeFrameVnet(frame, v)
}
