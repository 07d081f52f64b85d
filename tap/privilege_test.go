package tap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A refusal for want of privilege says what to do about it, and stays the
// error it was; other errors are left alone.
func TestPrivilegeHint(t *testing.T) {
	eperm := fmt.Errorf("tap: open t0: TUNSETIFF: %w", unix.EPERM)
	got := withPrivilegeHint(eperm)
	if !errors.Is(got, ErrNeedsPrivilege) || !errors.Is(got, unix.EPERM) || !strings.Contains(got.Error(), "CAP_NET_ADMIN") {
		t.Errorf("EPERM: %v", got)
	}
	other := fmt.Errorf("tap: bridge br9: %w", unix.ENODEV)
	if got := withPrivilegeHint(other); hasCapNetAdmin() && got != other {
		t.Errorf("ENODEV with CAP_NET_ADMIN: %v", got)
	} else if !hasCapNetAdmin() && !errors.Is(got, ErrNeedsPrivilege) {
		t.Errorf("ENODEV without CAP_NET_ADMIN: %v", got) // the errno may be lost on the way
	}
	if withPrivilegeHint(nil) != nil {
		t.Error("nil became an error")
	}
}

// Without privilege, opening a TAP fails with the hint. As root the test
// runs itself again as nobody, from a copy of the test binary nobody may
// execute.
func TestOpenDeviceUnprivileged(t *testing.T) {
	if os.Geteuid() == 0 {
		runAsNobody(t, "^TestOpenDeviceUnprivileged$")
		return
	}
	_, err := OpenDevice(DeviceConfig{Name: "rnpriv0"})
	if !errors.Is(err, ErrNeedsPrivilege) {
		t.Errorf("OpenDevice as uid %d: %v, want ErrNeedsPrivilege", os.Geteuid(), err)
	}
}

func runAsNobody(t *testing.T, run string) {
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody to run unprivileged as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("", "rnic-tap-priv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tap.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run="+run, "-test.v")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}
