// The daemon's identity: a client sends nothing to a socket served by
// another user.

package client_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
)

func TestTrustDaemonRule(t *testing.T) {
	for _, c := range []struct {
		daemon, self uint32
		ok           bool
	}{{1000, 1000, true}, {0, 1000, true}, {0, 0, true}, {1001, 1000, false}, {1000, 0, false}} {
		err := client.TrustDaemon(&unix.Ucred{Pid: 42, Uid: c.daemon}, c.self)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, client.ErrUntrustedDaemon)) {
			t.Errorf("daemon uid %d, client uid %d: %v, want ok=%v", c.daemon, c.self, err, c.ok)
		}
	}
}

// squatterUID is the user the squatter runs as (nobody).
const squatterUID = 65534

// TestSquatterReceivesNothing runs a listener as another user on a socket
// in a world-writable directory; opening a device or querying stats there
// must fail before any byte reaches it.
func TestSquatterReceivesNothing(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the squatter as another user (CI runs as root)")
	}
	dir, err := os.MkdirTemp("", "squat")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "rnicd.sock")
	// The test binary's own directory is private to root: run a copy.
	bin := filepath.Join(dir, "squatter.test")
	if err := copyExecutable(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "RNICD_TEST_ROLE=squatter", "RNICD_TEST_SOCKET="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: squatterUID, Gid: squatterUID}}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("squatter: %q", lines.Text())
	}
	_, err = ibv.Open(ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic0", Socket: sock})
	if !errors.Is(err, client.ErrUntrustedDaemon) {
		t.Fatalf("open at a squatter's socket: %v, want ErrUntrustedDaemon", err)
	}
	t.Log(err)
	if _, err := client.QueryStat(sock); !errors.Is(err, client.ErrUntrustedDaemon) {
		t.Fatalf("stat at a squatter's socket: %v, want ErrUntrustedDaemon", err)
	}
	stdin.Close()
	if !lines.Scan() {
		t.Fatal("squatter said nothing")
	}
	if got := lines.Text(); got != "connections 2 bytes 0" {
		t.Fatalf("squatter: %q, want two connections and no byte", got)
	}
}

func copyExecutable(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// roleSquatter listens on RNICD_TEST_SOCKET, says ready, counts the
// connections and bytes it receives until its stdin closes, and reports.
func roleSquatter() {
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: os.Getenv("RNICD_TEST_SOCKET"), Net: "unixpacket"})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	conns, bytes := make(chan int, 16), make(chan int, 16)
	go func() {
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return
			}
			conns <- 1
			go func() {
				buf := make([]byte, 1<<16)
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, _ := c.Read(buf)
				c.Close() // a client that did send must not wait for a reply
				bytes <- n
			}()
		}
	}()
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	nc, nb := 0, 0
	for nc < 2 {
		select {
		case <-conns:
			nc++
		case <-time.After(5 * time.Second):
			fmt.Println("connections", nc, "bytes", "?")
			os.Exit(0)
		}
	}
	for i := 0; i < nc; i++ {
		nb += <-bytes
	}
	fmt.Println(strings.Join([]string{"connections", fmt.Sprint(nc), "bytes", fmt.Sprint(nb)}, " "))
	os.Exit(0)
}

// With no daemon on the socket (none there, or a stale one), the error
// says how to start one, once, and still wraps the cause.
func TestNoDaemonSaysHowToStartOne(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: stale, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	for _, c := range []struct {
		sock string
		want error
	}{{filepath.Join(dir, "none.sock"), syscall.ENOENT}, {stale, syscall.ECONNREFUSED}} {
		_, err := client.QueryStat(c.sock)
		if err == nil {
			t.Fatalf("%s: no error", c.sock)
		}
		msg := err.Error()
		if !errors.Is(err, c.want) || !strings.Contains(msg, "start one with `rnicd --udp") ||
			strings.Count(msg, c.sock) != 2 || strings.Contains(msg, "dial unixpacket") {
			t.Errorf("%s: %v", c.sock, err)
		}
	}
}
