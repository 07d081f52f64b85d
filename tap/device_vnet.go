// The Device's I/O with a virtio_net_hdr (DeviceConfig.Offload, vnet.go):
// reads take the header and the frame in one read into one buffer; writes
// put a header before a frame with writev, so neither side copies the frame.

package tap

import (
	"fmt"
	"io"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Offload reports whether the TAP was opened with a virtio_net_hdr and the
// kernel took the offloads (DeviceConfig.Offload).
func (d *Device) Offload() bool { return d.offload }

// ReadVnet reads one frame with its virtio_net_hdr into b: b[:vnetHdrLen]
// is the header, the frame follows. b should hold vnetHdrLen+maxGSOFrame
// bytes (the kernel truncates a longer frame to len(b)). Only on an offload
// Device.
func (d *Device) ReadVnet(b []byte) (int, error) {
	n, err := d.file.Read(b)
	if err != nil {
		return 0, fmt.Errorf("tap: read from %s: %w", d.name, err)
	}
	return n, nil
}

// WriteVnet sends frame behind the virtio_net_hdr v, in one writev. Only
// on an offload Device. Writes are serialised (the poller's write lock
// would do it anyway), which lets every write reuse one writer and so
// allocate nothing.
func (d *Device) WriteVnet(v VnetHdr, frame []byte) error {
	w := &d.vw
	w.mu.Lock()
	v.put(w.hdr[:])
	w.frame = frame
	err := closedErr(d.raw.Write(w.write))
	n, werr := w.n, w.err
	w.frame = nil
	w.mu.Unlock()
	if err == nil {
		err = werr
	}
	if err == nil && n != vnetHdrLen+len(frame) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("tap: write to %s: %w", d.name, err)
	}
	return nil
}

// vnetWriter is the state of one WriteVnet: write, made once, is the
// function the raw conn calls with the fd.
type vnetWriter struct {
	mu    sync.Mutex
	hdr   [vnetHdrLen]byte
	frame []byte
	n     int
	err   error
	write func(fd uintptr) bool
}

func (w *vnetWriter) init() {
	w.write = func(fd uintptr) bool {
		w.n, w.err = writev2(int(fd), w.hdr[:], w.frame)
		return w.err != unix.EAGAIN
	}
}

// writev2 writes a and b with one writev, without the allocations of
// unix.Writev (this is every frame's path).
func writev2(fd int, a, b []byte) (int, error) {
	var iov [2]unix.Iovec
	iov[0].Base, iov[1].Base = &a[0], unsafe.SliceData(b)
	iov[0].SetLen(len(a))
	iov[1].SetLen(len(b))
	n, _, errno := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), 2)
	if errno != 0 {
		return int(n), errno
	}
	return int(n), nil
}

// readFrameVnet is ReadFrame on an offload Device: the header is read
// apart (readv) and, if the kernel left a partial checksum, it is finished,
// so the frame is whole; it may be a TCP super-segment longer than the MTU.
// A frame whose header is malformed is skipped.
func (d *Device) readFrameVnet(b []byte) (int, error) {
	for {
		var hdr [vnetHdrLen]byte
		var n int
		var rerr error
		err := closedErr(d.raw.Read(func(fd uintptr) bool {
			n, rerr = unix.Readv(int(fd), [][]byte{hdr[:], b})
			return rerr != unix.EAGAIN
		}))
		if err == nil {
			err = rerr
		}
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
