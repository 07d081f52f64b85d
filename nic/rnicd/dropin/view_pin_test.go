package dropin

// A root rnicd seen from the view of another user: in the user's
// namespace the kernel shows root as the overflow uid, so the view checks
// the daemon from the host's namespace and pins the socket it checked
// (nic/view/pin.go); the programs then trust it there. A daemon of a third
// user is still refused.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pinUser is a uid that is neither root nor nobody (the harness's user),
// with no passwd entry: a plain user of the host.
const pinUser = 4242

// startDaemonAs starts rnicd on a loopback address, as uid (0: root), its
// socket given to owner; it returns the socket.
func startDaemonAs(t *testing.T, uid, owner int) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rnic-pin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "rnicd.sock")
	p := &proc{name: "rnicd", cmd: exec.Command(build.rnicd, "--udp", loopbackAddr(), "--socket", sock), out: new(syncBuffer), done: make(chan struct{})}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if uid != 0 {
		p.cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
	}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	d := &daemon{p: p, socket: sock}
	t.Cleanup(d.stop)
	for deadline := time.Now().Add(programTimeout); !strings.Contains(p.out.String(), "rnicd: serving rnic0 on "); {
		if time.Now().After(deadline) {
			t.Fatalf("rnicd did not serve\n%s", p.report())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// rnicd makes its socket 0600: give it to the programs' user.
	if err := os.Chown(sock, owner, owner); err != nil {
		t.Fatal(err)
	}
	return sock
}

// asPinUser runs rnic exec -S sock -- sh -c script as pinUser.
func asPinUser(t *testing.T, sock, script string) (string, error) {
	t.Helper()
	vd, err := os.MkdirTemp("", "rnic-pin-view")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(vd) })
	if err := os.Chown(vd, pinUser, pinUser); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(build.rnic, "exec", "-S", sock, "--", "sh", "-c", script)
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL,
		Credential: &syscall.Credential{Uid: pinUser, Gid: pinUser, Groups: []uint32{}}}
	c.Env = append(withoutEnv(os.Environ(), "XDG_RUNTIME_DIR"), "RNIC_VIEW_DIR="+vd, "HOME="+vd)
	c.Dir = vd
	out, err := c.CombinedOutput()
	return string(out), err
}

const pinScript = `echo "id=$(id -u)"; [ -c /dev/infiniband/uverbs0 ] && echo "dev=yes"; ibv_devices`

func TestViewRootDaemonOtherUser(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "ibv_devices")
	if os.Getuid() != 0 {
		t.Skip("needs root: a root rnicd and a program of another user")
	}
	sock := startDaemonAs(t, 0, pinUser)
	out, err := asPinUser(t, sock, pinScript)
	kv := keyValues(out)
	if err != nil || kv["id"] != "4242" || kv["dev"] != "yes" || !strings.Contains(out, "rnic0") || strings.Contains(out, "without the device view") {
		t.Fatalf("uid %d on a root rnicd: %v, want the view and the device\n%s", pinUser, err, out)
	}
}

// A daemon of another user (nobody) is no more trusted in the view than
// outside it: no view, and the library refuses it.
func TestViewOtherUsersDaemonRefused(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "ibv_devices")
	if os.Getuid() != 0 {
		t.Skip("needs root: daemons and programs of two other users")
	}
	sock := startDaemonAs(t, build.uid, pinUser)
	out, _ := asPinUser(t, sock, pinScript)
	kv := keyValues(out)
	if kv["dev"] == "yes" || !strings.Contains(out, "without the device view") || !strings.Contains(out, "neither root nor") || strings.Contains(out, "rnic0") {
		t.Fatalf("uid %d on a daemon of uid %d: want no view and the daemon refused\n%s", pinUser, build.uid, out)
	}
}
