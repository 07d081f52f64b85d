package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

// TestListenFDs: the count of passed descriptors is read only when
// LISTEN_PID names this process; malformed variables are errors.
func TestListenFDs(t *testing.T) {
	for _, c := range []struct {
		pid, fds string
		want     int
		err      string
	}{
		{"", "", 0, ""},
		{"", "1", 0, ""},           // no LISTEN_PID: not for us
		{"4242", "1", 0, ""},       // another process's
		{"100", "1", 1, ""},        // ours
		{"100", "2", 2, ""},        // ours, refused by the caller
		{"100", "0", 0, ""},        // ours, none
		{"x", "1", 0, "not a pid"}, // garbage
		{"100", "", 0, "not a count"},
		{"100", "-1", 0, "not a count"},
	} {
		env := map[string]string{"LISTEN_PID": c.pid, "LISTEN_FDS": c.fds}
		n, err := listenFDs(func(k string) string { return env[k] }, 100)
		if n != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("LISTEN_PID=%q LISTEN_FDS=%q: %d, %v; want %d, error %q", c.pid, c.fds, n, err, c.want, c.err)
		}
	}
}

// TestInheritedListenerRefuses: a passed descriptor that is not a
// listening Unix SOCK_SEQPACKET socket is refused, saying what it is not.
func TestInheritedListenerRefuses(t *testing.T) {
	socket := func(typ int, listen bool) int {
		fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		if listen {
			if err := unix.Bind(fd, &unix.SockaddrUnix{Name: filepath.Join(t.TempDir(), "s")}); err != nil {
				t.Fatal(err)
			}
			if err := unix.Listen(fd, 1); err != nil {
				t.Fatal(err)
			}
		}
		return fd
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, c := range []struct {
		what string
		fd   int
		want string
	}{
		{"a pipe", int(r.Fd()), "not a socket"},
		{"a stream socket", socket(unix.SOCK_STREAM, true), "not SOCK_SEQPACKET"},
		{"an unbound SOCK_SEQPACKET socket", socket(unix.SOCK_SEQPACKET, false), "not listening"},
	} {
		if l, err := inheritedListener(c.fd); err == nil || !strings.Contains(err.Error(), c.want) {
			if l != nil {
				l.Close()
			}
			t.Errorf("%s: %v, want an error saying %q", c.what, err, c.want)
		}
	}
}

// TestSocketActivation hands rnicd a listening socket as systemd does
// (descriptor 3, LISTEN_FDS=1, LISTEN_PID its pid), connects clients to
// it and moves data between them, and checks that rnicd served there
// rather than on its --socket and left the socket in place on exit.
func TestSocketActivation(t *testing.T) {
	bin := buildRnicd(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "rnicd.sock")
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := l.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The shell sets LISTEN_PID to its own pid, which exec keeps for rnicd.
	notUsed := filepath.Join(dir, "not-used.sock")
	addr := rnicdtest.LoopbackAddr()
	cmd := exec.Command("sh", "-c", `export LISTEN_PID=$$ LISTEN_FDS=1; exec "$0" "$@"`,
		bin, "--udp", addr.String(), "--socket", notUsed)
	cmd.ExtraFiles = []*os.File{f} // descriptor 3
	d := startDaemonCmd(t, cmd, []string{"rnic0: udp " + addr.String() + ":4791", "rnicd: serving rnic0 on " + sock})
	rcWrite(t, openDev(t, "rnic0@"+sock), openDev(t, "rnic0@"+sock), 0, 0)
	if _, err := os.Lstat(notUsed); !os.IsNotExist(err) {
		t.Errorf("rnicd made its --socket too: %v", err)
	}
	d.stop(t)
	if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("the socket systemd listens on is gone after rnicd: %v", err)
	}
}

// TestSocketActivationBySystemd: systemd's own implementation of the
// protocol (systemd-socket-activate, the tool for trying units' services
// by hand) listens and starts rnicd on the first client, as rnicd.socket
// does; that client is served.
func TestSocketActivationBySystemd(t *testing.T) {
	tool, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		t.Skip("systemd-socket-activate is not installed (apt-get install systemd): activation by systemd's own code not tried")
	}
	bin := buildRnicd(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "rnicd.sock")
	addr := rnicdtest.LoopbackAddr()
	// The first client connects once the tool listens, and so starts rnicd.
	opened := make(chan error, 1)
	go func() {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Lstat(sock); err == nil {
				break
			} else if time.Now().After(deadline) {
				opened <- err
				return
			}
		}
		spec, err := ibv.ParseSpec("rnic0@" + sock)
		if err == nil {
			var dev ibv.Device
			if dev, err = ibv.Open(spec); err == nil {
				_, err = dev.AllocPD()
				dev.Close()
			}
		}
		opened <- err
	}()
	cmd := exec.Command(tool, "--seqpacket", "--listen", sock, bin, "--udp", addr.String(), "--socket", filepath.Join(dir, "not-used.sock"))
	d := startDaemonCmd(t, cmd, []string{"rnic0: udp " + addr.String() + ":4791", "rnicd: serving rnic0 on " + sock})
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("the first client: %v\nstderr: %s", err, d.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the first client not served within 20s\nstderr: %s", d.stderr.String())
	}
	d.stop(t)
}
