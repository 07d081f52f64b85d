// The daemon outlives a full descriptor table: an accept that fails with
// EMFILE is tried again, and clients are served once descriptors come back
// (it used to end Serve, and rnicd with it: a red-team finding).

package server_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/rnicd/server"
)

const emfileChildEnv = "RNICD_TEST_EMFILE_CHILD"

// TestAcceptSurvivesEMFILE runs the scenario in a child process, whose
// descriptor limit it may lower without starving this process's tests.
func TestAcceptSurvivesEMFILE(t *testing.T) {
	if os.Getenv(emfileChildEnv) != "" {
		emfileScenario(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAcceptSurvivesEMFILE$", "-test.v")
	cmd.Env = append(os.Environ(), emfileChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

func emfileScenario(t *testing.T) {
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "rnicd.sock")
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })

	// A limit a little above what is open now: the dials below fill it.
	lim := syscall.Rlimit{Cur: uint64(openFDs(t) + 24), Max: 1 << 20}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim.Max = old.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	var conns []*net.UnixConn
	deadline := time.Now().Add(20 * time.Second)
	for srv.Stats().AcceptErrors == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no accept failed in 20 s with %d clients under a limit of %d", len(conns), lim.Cur)
		}
		select {
		case err := <-served:
			t.Fatalf("Serve returned: %v", err)
		default:
		}
		if c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: sock, Net: "unixpacket"}); err == nil {
			conns = append(conns, c)
		} else {
			time.Sleep(5 * time.Millisecond) // this process is out of descriptors too
		}
	}
	t.Logf("accept failed after %d clients (limit %d)", len(conns), lim.Cur)
	// Serve goes on: give the descriptors back (clients leave), and every
	// client still waiting, and a new one, is served.
	for _, c := range conns[:len(conns)/2] {
		c.Close()
	}
	conns = conns[len(conns)/2:]
	before := srv.Stats().ClientsAccepted
	c, err := dialWithin(sock, 10*time.Second)
	if err != nil {
		t.Fatalf("dial after descriptors came back: %v", err)
	}
	defer c.Close()
	for srv.Stats().ClientsAccepted <= before {
		select {
		case err := <-served:
			t.Fatalf("Serve returned: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatalf("no client accepted after descriptors came back (%d accept errors)", srv.Stats().AcceptErrors)
		}
	}
	t.Logf("%d accept errors retried; %d clients accepted", srv.Stats().AcceptErrors, srv.Stats().ClientsAccepted)
	for _, c := range conns {
		c.Close()
	}
}

func dialWithin(sock string, d time.Duration) (*net.UnixConn, error) {
	end := time.Now().Add(d)
	for {
		c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: sock, Net: "unixpacket"})
		if err == nil || time.Now().After(end) {
			return c, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
