package view

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLiveHolder: a pid file whose liveness lock nobody holds is stale;
// a held one gives the holder's pid and namespaces.
func TestLiveHolder(t *testing.T) {
	t.Setenv(DirEnv, filepath.Join(t.TempDir(), "v"))
	p, err := pathsFor("/some/rnicd.sock")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeHolder(p.pid); err != nil {
		t.Fatal(err)
	}
	if h, err := liveHolder(p); h != nil || err != nil {
		t.Errorf("stale pid file: %+v err %v, want none", h, err)
	}
	held, err := lock(p.alive, unix.LOCK_EX)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	mnt, _ := os.Readlink("/proc/self/ns/mnt")
	if h, err := liveHolder(p); err != nil || h == nil || h.PID != os.Getpid() || h.NS["mnt"] != mnt {
		t.Errorf("held: %+v err %v, want pid %d in %s", h, err, os.Getpid(), mnt)
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
	t.Setenv(DirEnv, filepath.Join(t.TempDir(), "v"))
	p, err := pathsFor("/s")
	if err != nil {
		t.Fatal(err)
	}
	held, err := lock(p.alive, unix.LOCK_EX)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := writeHolder(p.pid); err != nil {
		t.Fatal(err)
	}
	h, err := liveHolder(p)
	if err != nil {
		t.Fatal(err)
	}
	argv, err := JoinArgv(h, "/", []string{"prog", "a"})
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
