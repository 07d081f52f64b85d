// Connecting to rnicd: the socket is only trusted once the kernel says who
// serves it.

package client

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/ibv"
)

// ErrUntrustedDaemon is wrapped by the error of a connection whose
// listener belongs to neither the client's uid nor root.
var ErrUntrustedDaemon = errors.New("rnicd: socket not served by this user or root")

// dial connects to the daemon's socket and checks who listens on it before
// anything is sent: a socket in a world-writable directory may belong to a
// squatter waiting for the client's first messages and memory. It returns
// the daemon's credentials too.
func dial(socket string) (*net.UnixConn, *unix.Ucred, error) {
	conn, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: socket, Net: "unixpacket"})
	if err != nil {
		return nil, nil, noDaemon(socket, err)
	}
	cred, err := peerCred(conn)
	if err == nil {
		err = trustDaemon(cred, uint32(os.Getuid()))
	}
	if err != nil && cred != nil && pinnedInView(socket, cred.Uid) {
		err = nil
	}
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("rnicd at %s: %w", socket, err)
	}
	return conn, cred, nil
}

// noDaemon words a failed connect: with no socket there, or nobody
// listening on it, what the user needs to hear is how to start rnicd (as
// the C library says), not the syscall.
func noDaemon(socket string, err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) && (errno == unix.ENOENT || errno == unix.ECONNREFUSED) {
		return fmt.Errorf("no rnicd at %s: %w; start one with `rnicd --udp 127.0.0.2` (or rnicd --socket %s ...), or set RNIC_SOCKET to where one listens",
			socket, errno, socket)
	}
	return fmt.Errorf("rnicd at %s: %w", socket, err)
}

// pinnedInView reports whether uid is how this user namespace shows an
// unmapped daemon (the overflow uid) on the socket rnic exec's view
// checked from the host and bound in place (ibv.PinnedEnv): a root
// rnicd, seen from a view of a user other than root.
func pinnedInView(socket string, uid uint32) bool {
	pinned := os.Getenv(ibv.PinnedEnv)
	return pinned != "" && pinned == socket && uid == overflowUID()
}

// overflowUID is the uid the kernel shows for a uid this user namespace
// does not map.
func overflowUID() uint32 {
	b, err := os.ReadFile("/proc/sys/kernel/overflowuid")
	if err != nil {
		return 65534
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return 65534
	}
	return uint32(v)
}

// peerCred returns the credentials the kernel recorded for the listener
// of the socket conn is connected to (its uid when it called listen).
func peerCred(conn *net.UnixConn) (*unix.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return cred, nil
}

// trustDaemon is the rule (proto's doc states it for every client): the
// daemon runs as the client's own uid or as root.
func trustDaemon(cred *unix.Ucred, self uint32) error {
	if cred.Uid == self || cred.Uid == 0 {
		return nil
	}
	return fmt.Errorf("%w: listener is pid %d uid %d, this process is uid %d", ErrUntrustedDaemon, cred.Pid, cred.Uid, self)
}
