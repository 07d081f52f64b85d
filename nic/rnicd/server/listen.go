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
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
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
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("rnicd: socket mode: %w", err)
	}
	return l, nil
}
