package ibv

import "testing"

// TestDefaultSocketPath: the environment overrides; an unprivileged user
// gets the per-user runtime directory; root, or a user without one, gets
// the system path.
func TestDefaultSocketPath(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		uid  int
		want string
	}{
		{map[string]string{}, 0, "/run/rnic/rnicd.sock"},
		{map[string]string{}, 1000, "/run/rnic/rnicd.sock"},
		{map[string]string{"XDG_RUNTIME_DIR": "/run/user/0"}, 0, "/run/rnic/rnicd.sock"},
		{map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, 1000, "/run/user/1000/rnic/rnicd.sock"},
		{map[string]string{"XDG_RUNTIME_DIR": ""}, 1000, "/run/rnic/rnicd.sock"},
		{map[string]string{"RNIC_SOCKET": "/tmp/x.sock", "XDG_RUNTIME_DIR": "/run/user/1000"}, 1000, "/tmp/x.sock"},
		{map[string]string{"RNIC_SOCKET": "/tmp/x.sock"}, 0, "/tmp/x.sock"},
		{map[string]string{"RNIC_SOCKET": "", "XDG_RUNTIME_DIR": "/run/user/7"}, 7, "/run/user/7/rnic/rnicd.sock"},
	} {
		getenv := func(k string) string { return c.env[k] }
		if got := defaultSocketPath(getenv, c.uid); got != c.want {
			t.Errorf("env %v uid %d: %q, want %q", c.env, c.uid, got, c.want)
		}
	}
}

// TestParseSpecDefaultSocket: NAME@ takes the rule's socket, here from
// the environment.
func TestParseSpecDefaultSocket(t *testing.T) {
	t.Setenv(SocketEnv, "/tmp/elsewhere.sock")
	s, err := ParseSpec("rnic0@")
	if err != nil || s.Socket != "/tmp/elsewhere.sock" {
		t.Fatalf("ParseSpec(rnic0@) = %+v, %v", s, err)
	}
}
