// The control socket: a Unix SOCK_SEQPACKET socket only its owner may use,
// in a directory created owner-only if it does not exist.

package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// Listen listens on the Unix SOCK_SEQPACKET socket path: it creates the
// directory (mode 0700) if missing, removes a stale socket nobody serves,
// refuses to take over one a running daemon serves, and makes the socket
// mode 0600. Closing the listener removes the socket.
func Listen(path string) (*net.UnixListener, error) {
	return ListenAs(path, SocketAccess{Mode: 0o600, UID: -1, GID: -1})
}

// SocketAccess is who may connect to a socket: its mode, and its owner
// and group (-1: the daemon's).
type SocketAccess struct {
	Mode     os.FileMode
	UID, GID int
}

// ListenAs is Listen with the socket's mode, owner and group a: a
// tenant's socket, for users other than the daemon's. A directory it
// creates is 0700, or 0711 when the socket is for others (they may
// reach the socket there, not list its neighbours).
func ListenAs(path string, a SocketAccess) (*net.UnixListener, error) {
	dir := filepath.Dir(path)
	dirMode := os.FileMode(0o700)
	if a.Mode&0o077 != 0 || a.UID >= 0 || a.GID >= 0 {
		dirMode = 0o711
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("rnicd: socket directory: %w", err)
		}
		// MkdirAll's mode passes through the umask; the last one's
		// is set here.
		if err := os.Chmod(dir, dirMode); err != nil {
			return nil, fmt.Errorf("rnicd: socket directory: %w", err)
		}
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("rnicd: %s exists and is not a socket", path)
		}
		c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("rnicd: %s: another daemon is serving it", path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("rnicd: %s: probing the existing socket: %w", path, err)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("rnicd: removing stale socket: %w", err)
		}
	}
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("rnicd: listen: %w", err)
	}
	// Between bind and chmod the socket has the umask's mode; the
	// directory, owner-only when created here, covers that window.
	if a.UID >= 0 || a.GID >= 0 {
		if err := os.Chown(path, a.UID, a.GID); err != nil {
			l.Close()
			return nil, fmt.Errorf("rnicd: socket owner: %w", err)
		}
	}
	if err := os.Chmod(path, a.Mode); err != nil {
		l.Close()
		return nil, fmt.Errorf("rnicd: socket mode: %w", err)
	}
	return l, nil
}
