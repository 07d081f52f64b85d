package main

import (
	"bufio"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

// TestDaemonDefaultSocketUnprivileged: an rnicd run by a user other than
// root, given no --socket, serves on $XDG_RUNTIME_DIR/rnic/rnicd.sock,
// the directory created owner-only. As root the test runs the daemon as
// nobody.
func TestDaemonDefaultSocketUnprivileged(t *testing.T) {
	dir, err := os.MkdirTemp("", "rnicd-socket-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // nobody runs the binary in it
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "rnicd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	xdg := filepath.Join(dir, "xdg")
	if err := os.Mkdir(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--udp", rnicdtest.LoopbackAddr().String())
	cmd.Env = append(withoutSocketEnv(os.Environ()), "XDG_RUNTIME_DIR="+xdg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Getuid() == 0 {
		uid, gid := nobody(t)
		if err := os.Chown(xdg, uid, gid); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	want := "rnicd: serving rnic0 on " + filepath.Join(xdg, "rnic", "rnicd.sock")
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("rnicd ended without %q", want)
			}
			if strings.HasPrefix(l, "rnicd: serving") {
				if l != want {
					t.Fatalf("rnicd said %q, want %q", l, want)
				}
				if fi, err := os.Stat(filepath.Join(xdg, "rnic")); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("socket directory %v (%v), want mode 0700", fi.Mode(), err)
				}
				return
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("rnicd did not say %q within 20s", want)
		}
	}
}

func nobody(t *testing.T) (uid, gid int) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("running as root, the test needs the user nobody to run rnicd unprivileged: %v", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

func withoutSocketEnv(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "RNIC_SOCKET=") {
			out = append(out, e)
		}
	}
	return out
}
