// Adopting a TAP someone else opened: a client hands the daemon the fd of a
// TAP it made (SCM_RIGHTS), and the daemon moves that TAP's frames as a
// Device. The TAP stays the client's: the daemon configures nothing of its
// link (name, MTU, addresses, namespace), only how frames cross this fd.

package tap

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotTAP is wrapped by the error of AdoptTAP for an fd that is not a
// TAP opened with IFF_NO_PI.
var ErrNotTAP = errors.New("tap: not a TAP fd without packet information (IFF_TAP|IFF_NO_PI)")

// AdoptTAP makes a Device of f, an fd of /dev/net/tun bound to a TAP
// (IFF_TAP, IFF_NO_PI). If the TAP was opened with IFF_VNET_HDR the
// Device moves frames behind a virtio_net_hdr, and offload says whether
// the kernel may hand it partial checksums and TCP super-segments
// (TUNSETOFFLOAD); without offload the kernel finishes and segments them
// itself. AdoptTAP takes f: the Device closes it. The fd is made
// non-blocking, which the sender's copy of it shares; the sender clearing
// that flag again cannot make the Device's reads and writes wait
// (nowait.go).
func AdoptTAP(f *os.File, offload bool) (*Device, error) {
	d, err := adoptTAP(f, offload)
	if err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

func adoptTAP(f *os.File, offload bool) (*Device, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("tap: adopt: %w", err)
	}
	var name string
	var vnet bool
	nfd := -1
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		if name, vnet, cerr = adoptFD(int(fd), offload); cerr == nil {
			// A dup for a fresh *os.File, so that Go's poller owns a
			// non-blocking fd (one received over a socket is not).
			nfd, cerr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
		}
	}); err != nil {
		return nil, fmt.Errorf("tap: adopt: %w", err)
	}
	if cerr != nil {
		return nil, fmt.Errorf("tap: adopt: %w", cerr)
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, fmt.Errorf("tap: adopt %s: %w", name, err)
	}
	f.Close()
	file := os.NewFile(uintptr(nfd), "/dev/net/tun")
	d := &Device{name: name, file: file, offload: vnet}
	if d.raw, err = file.SyscallConn(); err != nil {
		file.Close()
		return nil, fmt.Errorf("tap: adopt %s: %w", name, err)
	}
	d.initIO(true) // the sender's copy shares the file's flags
	return d, nil
}

// adoptFD checks fd (TUNGETIFF) and sets up its virtio_net_hdr if it has
// one: the header size and byte order the Device uses, and the offloads.
func adoptFD(fd int, offload bool) (string, bool, error) {
	ifr, err := unix.NewIfreq("")
	if err != nil {
		return "", false, err
	}
	if err := unix.IoctlIfreq(fd, unix.TUNGETIFF, ifr); err != nil {
		return "", false, fmt.Errorf("%w: TUNGETIFF: %w", ErrNotTAP, err)
	}
	name, flags := ifr.Name(), ifr.Uint16()
	if flags&unix.IFF_TAP == 0 || flags&unix.IFF_NO_PI == 0 {
		return "", false, fmt.Errorf("%w: %s has flags %#x", ErrNotTAP, name, flags)
	}
	if flags&unix.IFF_VNET_HDR == 0 {
		return name, false, nil
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TUNSETVNETHDRSZ, vnetHdrLen); err != nil {
		return "", false, fmt.Errorf("%s: TUNSETVNETHDRSZ: %w", name, err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TUNSETVNETLE, 1); err != nil {
		return "", false, fmt.Errorf("%s: TUNSETVNETLE: %w", name, err)
	}
	off := 0
	if offload {
		off = tunFCsum | tunFTSO4 | tunFTSO6
	}
	if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, off); err != nil {
		return "", false, fmt.Errorf("%s: TUNSETOFFLOAD: %w", name, err)
	}
	return name, true, nil
}

// WriteAs sends frame behind v whatever the Device's kind: on a plain
// Device a partial checksum is finished first (in frame) and a TCP
// super-segment refused (ErrFrameTooBig).
func (d *Device) WriteAs(v VnetHdr, frame []byte) error {
	if d.offload {
		return d.WriteVnet(v, frame)
	}
	if v.GSOType != vnetGSONone {
		return fmt.Errorf("tap: write to %s: a super-segment on a TAP without offload: %w", d.name, ErrFrameTooBig)
	}
	if v.Flags&vnetFlagNeedsCsum != 0 {
		if v.check(frame) != nil {
			return fmt.Errorf("tap: write to %s: %w", d.name, errVnet)
		}
		finishChecksum(frame, v)
	}
	return d.WriteFrame(frame)
}

// ReadAs reads one frame into b and returns its virtio_net_hdr (the zero
// one on a plain Device) and the frame, a slice of b: behind the header on
// an offload Device, whose frame may carry a partial checksum or be a
// super-segment (b should then hold vnetHdrLen+MaxFrame bytes). A frame
// with a malformed header is skipped.
func (d *Device) ReadAs(b []byte) (VnetHdr, []byte, error) {
	if !d.offload {
		n, err := d.ReadFrame(b)
		return VnetHdr{}, b[:n], err
	}
	for {
		n, err := d.ReadVnet(b)
		if err != nil {
			return VnetHdr{}, nil, err
		}
		if n < vnetHdrLen {
			continue
		}
		v, frame := parseVnetHdr(b), b[vnetHdrLen:n]
		if v.check(frame) == nil {
			return v, frame, nil
		}
	}
}

// MaxFrame is the longest frame ReadAs returns: a TCP super-segment.
const MaxFrame = maxGSOFrame

// VnetHdrLen is the size of the virtio_net_hdr ahead of a frame.
const VnetHdrLen = vnetHdrLen

// SetRxTSO says whether the kernel may hand this offload Device TCP
// super-segments (TUNSETOFFLOAD TSO4|TSO6; partial checksums stay on). A
// host port without a virtio_net_hdr cannot take super-segments, so while
// one is attached its NIC's TAP asks the kernel to segment for it.
func (d *Device) SetRxTSO(on bool) error {
	if !d.offload {
		return nil
	}
	off := tunFCsum
	if on {
		off |= tunFTSO4 | tunFTSO6
	}
	var err error
	if cerr := d.raw.Control(func(fd uintptr) { err = unix.IoctlSetInt(int(fd), unix.TUNSETOFFLOAD, off) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("tap: %s: TUNSETOFFLOAD: %w", d.name, err)
	}
	return nil
}
