// Where rnicd's control socket is when nobody says: one rule for the
// daemon (its --socket default), the Go client (NAME@) and the drop-in
// libibverbs (nic/rnicd/dropin), so an unprivileged rnicd and its
// programs meet without flags.

package ibv

import (
	"os"
	"path/filepath"
)

// DefaultSocket is where a root rnicd listens unless told otherwise.
const DefaultSocket = "/run/rnic/rnicd.sock"

// SocketEnv names the environment variable that overrides the rule.
const SocketEnv = "RNIC_SOCKET"

// ViewEnv is set (to 1) by rnic exec in the environment of a program it
// runs in the device view (nic/view): there the program's own network
// namespace carries the NICs' addresses, as a host carries its RDMA
// device's, so a side channel belongs on the program's kernel TCP (where
// an unmodified C peer in the view listens), not on the daemon's.
const ViewEnv = "RNIC_VIEW"

// PinnedEnv names, in an rnic exec view of a user other than root, the
// daemon socket the view checked from the host's namespace (served by root
// or the user) and bound onto its path, so that no one can replace it in
// the view. Inside the user namespace the kernel shows a root daemon as
// the overflow uid: clients accept that uid on this path only.
const PinnedEnv = "RNIC_VIEW_SOCKET"

// InView reports whether this process runs in an rnic exec view.
func InView() bool { return os.Getenv(ViewEnv) != "" }

// DefaultSocketPath is the control socket this process should use when no
// socket is given: $RNIC_SOCKET; else, for a user other than root, the
// per-user $XDG_RUNTIME_DIR/rnic/rnicd.sock (root's /run is not writable
// by an unprivileged daemon); else DefaultSocket.
func DefaultSocketPath() string {
	return defaultSocketPath(os.Getenv, os.Getuid())
}

// defaultSocketPath is the rule, with the environment and uid given.
func defaultSocketPath(getenv func(string) string, uid int) string {
	if s := getenv(SocketEnv); s != "" {
		return s
	}
	if dir := getenv("XDG_RUNTIME_DIR"); uid != 0 && dir != "" {
		return filepath.Join(dir, "rnic", "rnicd.sock")
	}
	return DefaultSocket
}

// SocketRule says DefaultSocketPath's rule in words, for help texts.
const SocketRule = "$" + SocketEnv + ", else $XDG_RUNTIME_DIR/rnic/rnicd.sock for a user other than root, else " + DefaultSocket
