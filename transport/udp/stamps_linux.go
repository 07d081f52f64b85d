// Receive timestamps (Config.RecvTimestamps) from the first datagram on.
//
// Linux stamps arriving packets only while some socket of the host asks
// for timestamps, and it switches that on lazily: the first socket to set
// SO_TIMESTAMPNS schedules the switch on a work queue, and until it has
// run the kernel stamps a datagram when it is read, not when it arrived.
// That is exactly the late reader's time the option is there to avoid, so
// Open waits until stamps are taken on arrival: it sends a probe datagram
// to a socket of its own and reads the stamp back, until the stamp
// predates the end of the send.

package udp

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sizeofTimespec is the size of the struct timespec SCM_TIMESTAMPNS
// carries.
const sizeofTimespec = int(unsafe.Sizeof(unix.Timespec{}))

// stampNanos reads an SCM_TIMESTAMPNS payload as Unix nanoseconds; 0 if
// it is too short to hold a timespec.
func stampNanos(data []byte) int64 {
	if len(data) < sizeofTimespec {
		return 0
	}
	return (*unix.Timespec)(unsafe.Pointer(&data[0])).Nano()
}

// stampWait bounds how long Open waits for arrival stamps; past it the
// endpoint's times may be read times for a while (no worse than none).
const stampWait = time.Second

// awaitArrivalStamps returns once the kernel stamps datagrams on arrival,
// or after stampWait, or at once if no probe socket can be had. The
// endpoint's own socket must already ask for stamps, so that they stay on
// when the probe's socket closes.
func awaitArrivalStamps() {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	lo := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) != nil ||
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) != nil ||
		unix.Bind(fd, lo) != nil {
		return
	}
	self, err := unix.Getsockname(fd)
	if err != nil {
		return
	}
	deadline := time.Now().Add(stampWait)
	for time.Now().Before(deadline) {
		if stamp, sent, ok := probeStamp(fd, self); !ok {
			return
		} else if stamp != 0 && stamp <= sent {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// probeStamp sends one datagram to the socket itself and reads it back:
// its stamp, and the time just after the send (Unix nanoseconds).
func probeStamp(fd int, self unix.Sockaddr) (stamp, sent int64, ok bool) {
	if unix.Sendto(fd, []byte{0}, 0, self) != nil {
		return 0, 0, false
	}
	sent = time.Now().UnixNano()
	var buf [1]byte
	oob := make([]byte, ctlStampLen)
	_, oobn, _, _, err := unix.Recvmsg(fd, buf[:], oob, 0)
	if err != nil {
		return 0, 0, false
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return 0, sent, true
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS {
			stamp = stampNanos(m.Data)
		}
	}
	return stamp, sent, true
}
