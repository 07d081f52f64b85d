// Socket activation: systemd (rnicd.socket) creates and listens on the
// control socket itself and starts rnicd on the first connection, handing
// the listening socket down by the sd_listen_fds protocol: the socket is
// descriptor 3 and the environment says LISTEN_FDS=1 and LISTEN_PID=<the
// pid of rnicd>. A few lines of it here rather than a systemd library.

package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// listenFDsStart is the first descriptor the protocol passes.
const listenFDsStart = 3

// listenEnv are the protocol's variables, unset once read so that no
// process rnicd starts takes them for its own.
var listenEnv = []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"}

// activationListener returns the control socket systemd passed to this
// process, or nil when it passed none. It insists on exactly one
// listening Unix SOCK_SEQPACKET socket: anything else is a unit file
// that does not match the protocol rnicd speaks, better refused at start
// than found out by each client.
func activationListener() (*net.UnixListener, error) {
	n, err := listenFDs(os.Getenv, os.Getpid())
	for _, k := range listenEnv {
		os.Unsetenv(k)
	}
	if err != nil || n == 0 {
		return nil, err
	}
	if n != 1 {
		return nil, fmt.Errorf("socket activation: %d sockets passed (LISTEN_FDS), rnicd serves one: give rnicd.socket one ListenSequentialPacket=", n)
	}
	return inheritedListener(listenFDsStart)
}

// listenFDs is how many descriptors from listenFDsStart on the
// environment (getenv) passes to the process pid: 0 when it passes none,
// or passes them to another process (LISTEN_PID is someone else's).
func listenFDs(getenv func(string) string, pid int) (int, error) {
	lp := getenv("LISTEN_PID")
	if lp == "" {
		return 0, nil
	}
	p, err := strconv.Atoi(lp)
	if err != nil || p <= 0 {
		return 0, fmt.Errorf("socket activation: LISTEN_PID=%q is not a pid", lp)
	}
	if p != pid {
		return 0, nil
	}
	n, err := strconv.Atoi(getenv("LISTEN_FDS"))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("socket activation: LISTEN_FDS=%q is not a count", getenv("LISTEN_FDS"))
	}
	return n, nil
}

// inheritedListener makes descriptor fd, which must be a listening Unix
// SOCK_SEQPACKET socket, the control socket's listener. The socket file
// stays when the listener closes: it is systemd's, which keeps listening
// to start rnicd again.
func inheritedListener(fd int) (*net.UnixListener, error) {
	if err := checkListening(fd); err != nil {
		return nil, fmt.Errorf("socket activation: descriptor %d: %w", fd, err)
	}
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "LISTEN_FDS")
	defer f.Close() // FileListener works on its own copy
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("socket activation: descriptor %d: %w", fd, err)
	}
	ul, ok := l.(*net.UnixListener)
	if !ok {
		l.Close()
		return nil, fmt.Errorf("socket activation: descriptor %d is not a Unix socket", fd)
	}
	ul.SetUnlinkOnClose(false)
	return ul, nil
}

// checkListening says what is wrong with fd as rnicd's control socket.
func checkListening(fd int) error {
	for _, want := range []struct {
		opt   int
		value int
		what  string
	}{
		{unix.SO_DOMAIN, unix.AF_UNIX, "not a Unix socket"},
		{unix.SO_TYPE, unix.SOCK_SEQPACKET, "not SOCK_SEQPACKET (rnicd.socket needs ListenSequentialPacket=)"},
		{unix.SO_ACCEPTCONN, 1, "not listening"},
	} {
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, want.opt)
		if errors.Is(err, unix.ENOTSOCK) || errors.Is(err, unix.EBADF) {
			return errors.New("not a socket")
		}
		if err != nil {
			return err
		}
		if v != want.value {
			return errors.New(want.what)
		}
	}
	return nil
}
