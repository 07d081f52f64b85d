// Privileged ports: the daemon listens for clients with its own
// privileges, so it applies the kernel's rule for them itself. A client
// that could not bind port 22 or 443 on its own must not get it through a
// root rnicd on the NIC's address.

package server

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rnic/rnic/nic/verbs"
)

// unprivilegedPortStart is the kernel's net.ipv4.ip_unprivileged_port_start
// (1024 unless the host changed it): ports below it need root.
func unprivilegedPortStart() uint16 {
	const def = 1024
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start")
	if err != nil {
		return def
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v < 0 || v > 65535 {
		return def
	}
	return uint16(v)
}

// mayBind reports, as the kernel's bind would, whether the session's
// client may take port: port 0 (any free one) and ports from the host's
// unprivileged start on are everyone's, the others root's.
func (s *Session) mayBind(port uint16) error {
	if port == 0 || port >= unprivilegedPortStart() || s.cred.Uid == 0 {
		return nil
	}
	return fmt.Errorf("rnicd: port %d is privileged (below net.ipv4.ip_unprivileged_port_start %d): only root may take it, as with the kernel's bind: %w",
		port, unprivilegedPortStart(), verbs.ErrPermission)
}
