package view

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLivePID: a pid file whose liveness lock nobody holds is stale; a
// held one gives its pid.
func TestLivePID(t *testing.T) {
	t.Setenv(DirEnv, filepath.Join(t.TempDir(), "v"))
	p, err := pathsFor("/some/rnicd.sock")
	if err != nil {
		t.Fatal(err)
	}
	if err := writePID(p.pid, 999999); err != nil {
		t.Fatal(err)
	}
	if pid, err := livePID(p); pid != 0 || err != nil {
		t.Errorf("stale pid file: pid %d err %v, want none", pid, err)
	}
	held, err := lock(p.alive, unix.LOCK_EX)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := writePID(p.pid, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if pid, err := livePID(p); pid != os.Getpid() || err != nil {
		t.Errorf("held: pid %d err %v, want %d", pid, err, os.Getpid())
	}
}

// TestUserDirChecked: a directory others may write is refused.
func TestUserDirChecked(t *testing.T) {
	d := filepath.Join(t.TempDir(), "v")
	if err := os.Mkdir(d, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o777)
	t.Setenv(DirEnv, d)
	if _, err := pathsFor("/s"); err == nil {
		t.Error("a world-writable view directory was accepted")
	}
}

func TestParseReport(t *testing.T) {
	if pid, err := parseReport("ok 42"); pid != 42 || err != nil {
		t.Errorf("ok 42: %d %v", pid, err)
	}
	if _, err := parseReport("unavailable the kernel refuses"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("unavailable: %v", err)
	}
	if _, err := parseReport("error view: boom"); err == nil || err.Error() != "view: boom" {
		t.Errorf("error: %v", err)
	}
}

// TestJoinArgv: a process already in the view runs the program as is.
func TestJoinArgv(t *testing.T) {
	argv, err := JoinArgv(os.Getpid(), "/", []string{"prog", "a"})
	if err != nil || len(argv) != 2 || argv[0] != "prog" {
		t.Errorf("inside: %q %v, want the program alone", argv, err)
	}
}

func TestUnescapeMount(t *testing.T) {
	// mountinfo escapes space, tab, newline and backslash in octal.
	if s := unescapeMount(`/a\040b\134c`); s != `/a b\c` {
		t.Errorf("%q", s)
	}
}
