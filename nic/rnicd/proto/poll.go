// Polling the socket: both ends of a control call poll for the other's
// next message for a bounded time before they park (the daemon for the
// next request, the client for its reply), because a round trip in which
// both ends sleep in the kernel pays two wake-ups of idle CPUs: ~25 µs
// each on a virtual machine (CI runners), several times the daemon's work
// for most requests. A peer in the same process shares the Go scheduler,
// which hands over between goroutines without waking a CPU, so neither
// end polls then (PollsFor).

package proto

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PollTime is how long an end polls for the other's next message.
const PollTime = 50 * time.Microsecond

// PollsFor says whether an end polls for the messages of the peer with
// that pid (SO_PEERCRED): not when the peer is this process.
func PollsFor(peerPID int32) bool { return int(peerPID) != os.Getpid() }

// Received is one recvmsg's result.
type Received struct {
	N, OOBN, Flags int
	Err            error
}

// PollRecv tries non-blocking reads of conn for d; ok is false if nothing
// came (then the caller parks in the netpoller, ReadMsgUnix). It does not
// yield its P: a yielding goroutine stays runnable, so no idle P would
// wait in the netpoller for the other messages of the process.
func PollRecv(conn syscall.Conn, buf, oob []byte, d time.Duration) (r Received, ok bool) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return r, false
	}
	deadline := time.Now().Add(d)
	raw.Read(func(fd uintptr) bool {
		for {
			n, oobn, flags, _, err := unix.Recvmsg(int(fd), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case !errors.Is(err, unix.EAGAIN):
				r, ok = Received{n, oobn, flags, err}, true
				return true
			case time.Now().After(deadline):
				return true // not a wait: that is the caller's ReadMsgUnix
			}
		}
	})
	return r, ok
}
