// Polling the socket: both ends of a control call poll for the other's
// next message for a bounded time before they park (the daemon for the
// next request, the client for its reply), because a round trip in which
// both ends sleep in the kernel pays two wake-ups of idle CPUs: ~25 µs
// each on a virtual machine (CI runners), several times the daemon's work
// for most requests. The polling is transport/poll's: for its Time after
// the last message, holding a P, at most GOMAXPROCS-1 pollers a process.
// A peer in the same process shares the Go scheduler, which hands over
// between goroutines without waking a CPU, so neither end polls then
// (PollsFor).

package proto

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/transport/poll"
)

// PollsFor says whether an end polls for the messages of the peer with
// that pid (SO_PEERCRED): not when the peer is this process.
func PollsFor(peerPID int32) bool { return int(peerPID) != os.Getpid() }

// Received is one recvmsg's result.
type Received struct {
	N, OOBN, Flags int
	Err            error
}

// PollRecv tries non-blocking reads of conn while p says to (p.Received
// starts its window); ok is false if nothing came (then the caller parks
// in the netpoller, ReadMsgUnix).
func PollRecv(conn syscall.Conn, buf, oob []byte, p *poll.Poller) (r Received, ok bool) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return r, false
	}
	defer p.Release()
	raw.Read(func(fd uintptr) bool {
		for {
			n, oobn, flags, _, err := unix.Recvmsg(int(fd), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case !errors.Is(err, unix.EAGAIN):
				r, ok = Received{n, oobn, flags, err}, true
				return true
			case !p.Again():
				return true // not a wait: that is the caller's ReadMsgUnix
			}
		}
	})
	return r, ok
}
