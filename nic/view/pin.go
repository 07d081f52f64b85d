// A root rnicd seen from a user namespace: the kernel reports its uid as
// the overflow uid (nobody), which clients refuse, since any other user's
// daemon looks the same. So the view checks the daemon from the host's
// namespace, where root is root, and pins what it checked: the socket
// inode it connected to is bound onto the socket's path inside the view,
// where nobody can replace it. Clients in the view then accept the
// overflow uid on that path alone (PinnedEnv). The check names the inode
// (device and number); the holder, in the view's own mount namespace,
// binds the path only if it is still that inode, through the descriptor
// it compared (a bind from a descriptor of the host's namespace is not
// allowed).

package view

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/ibv"
)

// Pin is the socket inode the view checked.
type Pin struct{ Dev, Ino uint64 }

// verify checks, through one inode of socket, that root or this user
// serves it, and returns that inode: what the view pins is what was
// checked, whatever happens to the path meanwhile.
func verify(socket string) (Pin, error) {
	fd, err := unix.Open(socket, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return Pin{}, fmt.Errorf("view: %s: %w", socket, err)
	}
	defer unix.Close(fd)
	uid, err := peerUID(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return Pin{}, fmt.Errorf("view: %s: %w", socket, err)
	}
	if uid != 0 && uid != uint32(os.Getuid()) {
		return Pin{}, fmt.Errorf("%w: %s is served by uid %d, neither root nor this user", ErrUnavailable, socket, uid)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Pin{}, fmt.Errorf("view: %s: %w", socket, err)
	}
	return Pin{Dev: st.Dev, Ino: st.Ino}, nil
}

// peerUID connects to the Unix socket at path and returns its listener's
// uid (SO_PEERCRED).
func peerUID(path string) (uint32, error) {
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(s)
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: path}); err != nil {
		return 0, err
	}
	cred, err := unix.GetsockoptUcred(s, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return 0, err
	}
	return cred.Uid, nil
}

// pinSocket binds socket onto itself in this mount namespace if it is
// still the inode pin names, and tells this process's clients so.
func pinSocket(socket string, pin Pin) error {
	fd, err := unix.Open(socket, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("view: pin %s: %w", socket, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("view: pin %s: %w", socket, err)
	}
	if st.Dev != pin.Dev || st.Ino != pin.Ino {
		return fmt.Errorf("view: %s changed since it was checked: not pinned", socket)
	}
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), socket, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("view: pin %s: %w", socket, err)
	}
	return os.Setenv(ibv.PinnedEnv, socket)
}
