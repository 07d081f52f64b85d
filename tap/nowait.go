// I/O that the fd's O_NONBLOCK flag cannot make wait. A TAP a client hands
// the daemon (adopt.go) shares its open file description with the client's
// own copy, file status flags included: the client may clear O_NONBLOCK on
// its copy at any time. A read(2) would then wait in the kernel for the
// next frame, holding one of the daemon's threads, and Close would wait
// for that read: a client could keep its session from ever being reaped
// and the daemon from ever stopping. preadv2 and pwritev2 with RWF_NOWAIT
// ask for non-blocking I/O per call (the tun driver honours it whatever
// the file's flags), so an adopted Device never waits in the kernel; it
// waits for the fd in Go's poller, which Close wakes.

package tap

import (
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// vecOp is one direction's I/O of a Device: up to two buffers in one
// preadv2 or pwritev2 (a virtio_net_hdr and its frame), with RWF_NOWAIT
// on an adopted Device. Its function is made once and its iovecs live in
// it, so an operation allocates nothing. Operations are serialised.
type vecOp struct {
	mu    sync.Mutex
	sysno uintptr // SYS_PREADV2 or SYS_PWRITEV2
	plain uintptr // SYS_READV or SYS_WRITEV
	// nowait: every call is sysno's with RWF_NOWAIT, until a kernel
	// refuses it (EOPNOTSUPP: a tun driver without it; ENOSYS: no
	// preadv2): the Device then relies on the fd's O_NONBLOCK with
	// plain readv and writev, as before.
	nowait atomic.Bool
	// hdr is room for a virtio_net_hdr (the vnet paths, under mu).
	hdr [vnetHdrLen]byte
	iov [2]unix.Iovec
	cnt int
	n   int
	err error
	fn  func(fd uintptr) bool
}

func (o *vecOp) init(sysno, plain uintptr, nowait bool) {
	o.sysno, o.plain = sysno, plain
	o.nowait.Store(nowait)
	o.fn = o.call
}

// call is the raw conn's function: false (EAGAIN) makes the poller wait
// for the fd and call it again.
func (o *vecOp) call(fd uintptr) bool {
	var n uintptr
	var errno unix.Errno
	if o.nowait.Load() {
		// Offset -1 (both halves): the file's position, as readv and
		// writev; a TAP has none.
		n, _, errno = unix.Syscall6(o.sysno, fd, uintptr(unsafe.Pointer(&o.iov[0])), uintptr(o.cnt), ^uintptr(0), ^uintptr(0), unix.RWF_NOWAIT)
		if errno == unix.EOPNOTSUPP || errno == unix.ENOSYS {
			o.nowait.Store(false)
		}
	}
	if !o.nowait.Load() {
		n, _, errno = unix.Syscall(o.plain, fd, uintptr(unsafe.Pointer(&o.iov[0])), uintptr(o.cnt))
	}
	o.n, o.err = int(n), nil
	if errno != 0 {
		o.n, o.err = 0, errno
	}
	return errno != unix.EAGAIN
}

// do moves a and then b (either may be empty) through raw, the Device's
// fd, in one call. It returns the bytes moved.
func (o *vecOp) do(raw syscall.RawConn, a, b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.doLocked(raw, a, b)
}

// doLocked is do with o.mu held (a vnet path filling or reading o.hdr).
func (o *vecOp) doLocked(raw syscall.RawConn, a, b []byte) (int, error) {
	o.cnt = 0
	for _, p := range [2][]byte{a, b} {
		if len(p) > 0 {
			o.iov[o.cnt].Base = unsafe.SliceData(p)
			o.iov[o.cnt].SetLen(len(p))
			o.cnt++
		}
	}
	var err error
	if o.sysno == unix.SYS_PWRITEV2 {
		err = raw.Write(o.fn)
	} else {
		err = raw.Read(o.fn)
	}
	n, oerr := o.n, o.err
	o.iov = [2]unix.Iovec{} // keep no caller's buffer alive
	if err != nil {
		return 0, closedErr(err)
	}
	return n, oerr
}

// initIO makes the Device's read and write ops; nowait for a TAP whose
// open file description another process shares.
func (d *Device) initIO(nowait bool) {
	d.rd.init(unix.SYS_PREADV2, unix.SYS_READV, nowait)
	d.wr.init(unix.SYS_PWRITEV2, unix.SYS_WRITEV, nowait)
}
