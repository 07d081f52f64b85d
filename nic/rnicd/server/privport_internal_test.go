package server

import (
	"errors"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
	"golang.org/x/sys/unix"
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
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, verbs.ErrPermission)) {
			t.Errorf("uid %d port %d: %v, want allowed %v", c.s.cred.Uid, c.port, err, c.ok)
		}
	}
}

// A host port of a user other than root and the daemon's is a user's.
func TestUserHostPort(t *testing.T) {
	for _, c := range []struct {
		client uint32
		daemon int
		user   bool
	}{{0, 0, false}, {1000, 1000, false}, {0, 1000, false}, {1000, 0, true}, {65534, 0, true}, {1001, 1000, true}} {
		if got := userHostPort(c.client, c.daemon); got != c.user {
			t.Errorf("client uid %d, daemon uid %d: user %v, want %v", c.client, c.daemon, got, c.user)
		}
	}
}
