package server

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic"
)

// Through the daemon a client binds what the kernel would let it bind:
// a user gets port 0 and unprivileged ports, root any.
func TestMayBindPrivilegedPorts(t *testing.T) {
	start := unprivilegedPortStart()
	if start == 0 {
		t.Skip("net.ipv4.ip_unprivileged_port_start is 0 on this host: every port is unprivileged")
	}
	user := &Session{cred: unix.Ucred{Uid: 1000}}
	root := &Session{cred: unix.Ucred{Uid: 0}}
	for _, c := range []struct {
		s    *Session
		port uint16
		ok   bool
	}{{user, 0, true}, {user, start, true}, {user, 18515, true}, {user, start - 1, false}, {user, 22, start <= 22},
		{root, 22, true}, {root, 1, true}} {
		err := c.s.mayBind(c.port)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, nic.ErrPermission)) {
			t.Errorf("uid %d port %d: %v, want allowed %v", c.s.cred.Uid, c.port, err, c.ok)
		}
	}
}

// A host port (raw frames on the NIC's wire) is root's or the daemon's
// own user's: another user's program keeps its view local.
func TestMayAttachHostPort(t *testing.T) {
	for _, c := range []struct {
		client uint32
		daemon int
		ok     bool
	}{{0, 0, true}, {1000, 1000, true}, {0, 1000, true}, {1000, 0, false}, {65534, 0, false}, {1001, 1000, false}} {
		err := mayAttachHostPort(c.client, c.daemon, "rnic0")
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, nic.ErrPermission)) {
			t.Errorf("client uid %d, daemon uid %d: %v, want allowed %v", c.client, c.daemon, err, c.ok)
		}
	}
}
