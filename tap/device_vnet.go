// The Device's I/O with a virtio_net_hdr (DeviceConfig.Offload, vnet.go):
// reads take the header and the frame in one read into one buffer; writes
// put a header before a frame in one vectored write (nowait.go), so neither
// side copies the frame.

package tap

import (
	"fmt"
	"io"
	"os"
)

// Offload reports whether the TAP was opened with a virtio_net_hdr and the
// kernel took the offloads (DeviceConfig.Offload).
func (d *Device) Offload() bool { return d.offload }

// ReadVnet reads one frame with its virtio_net_hdr into b: b[:vnetHdrLen]
// is the header, the frame follows. b should hold vnetHdrLen+maxGSOFrame
// bytes (the kernel truncates a longer frame to len(b)). Only on an offload
// Device.
func (d *Device) ReadVnet(b []byte) (int, error) {
	n, err := d.rd.do(d.raw, b, nil)
	if err != nil {
		return 0, fmt.Errorf("tap: read from %s: %w", d.name, err)
	}
	return n, nil
}

// WriteVnet sends frame behind the virtio_net_hdr v, in one call. Only on
// an offload Device. Writes are serialised (the poller's write lock would
// do it anyway), which lets every write reuse one header and one set of
// iovecs and so allocate nothing.
func (d *Device) WriteVnet(v VnetHdr, frame []byte) error {
	w := &d.wr
	w.mu.Lock()
	v.put(w.hdr[:])
	n, err := w.doLocked(d.raw, w.hdr[:], frame)
	w.mu.Unlock()
	if err == nil && n != vnetHdrLen+len(frame) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("tap: write to %s: %w", d.name, err)
	}
	return nil
}

// readFrameVnet is ReadFrame on an offload Device: the header is read
// apart (into the reader's own room) and, if the kernel left a partial
// checksum, it is finished, so the frame is whole; it may be a TCP
// super-segment longer than the MTU. A frame whose header is malformed is
// skipped.
func (d *Device) readFrameVnet(b []byte) (int, error) {
	r := &d.rd
	for {
		r.mu.Lock()
		n, err := r.doLocked(d.raw, r.hdr[:], b)
		hdr := r.hdr
		r.mu.Unlock()
		if err != nil {
			return 0, fmt.Errorf("tap: read from %s: %w", d.name, err)
		}
		if n < vnetHdrLen {
			continue
		}
		n -= vnetHdrLen
		v := parseVnetHdr(hdr[:])
		if v.check(b[:n]) != nil {
			continue
		}
		if v.Flags&vnetFlagNeedsCsum != 0 {
			finishChecksum(b[:n], v)
		}
		return n, nil
	}
}

// closedErr maps the error of a raw read or write (the poller's own: the
// fd is closing) to one wrapping os.ErrClosed, as os.File's Read and Write
// report it.
func closedErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w (%v)", os.ErrClosed, err)
}
