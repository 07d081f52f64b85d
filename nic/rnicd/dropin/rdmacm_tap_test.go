package dropin

// rdma_cm programs on NICs in the TAP mode (as root: rnicd owns TAPs on a
// bridge in a namespace of the test's; the programs still run as nobody,
// talking only to rnicd). A TAP NIC's GID table is Linux's: GID 0 is its
// link-local address and its IPv4 address comes later, which the library
// must find; an iWARP NIC on a TAP speaks MPA over its own TCP across the
// bridge.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/tap/taptest"
)

// tapDaemon starts a root rnicd with rnic0 and rnic1 on TAPs on n's bridge
// (transport "roce" or "iwarp"), its socket the programs' user's.
func tapDaemon(t *testing.T, n *taptest.Net, transport string, host int) *daemon {
	t.Helper()
	dir, err := userDir(build.dir, fmt.Sprintf("tapsock-%s-%d", transport, host))
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{socket: filepath.Join(dir, "rnicd.sock"),
		addrs: [2]string{n.Addr4(host).Addr().String(), n.Addr4(host + 1).Addr().String()}}
	tap := func(i int) string { return fmt.Sprintf("%s%d", transport[:2], i) }
	argv := []string{build.rnicd, "--socket", d.socket, "--transport", transport,
		"--tap", tap(0), "--ip", n.Addr4(host).String(), "--netns", n.Name, "--bridge", n.Bridge,
		"--device", fmt.Sprintf("name=rnic1,transport=%s,tap=%s,ip=%s,netns=%s,bridge=%s",
			transport, tap(1), n.Addr4(host+1), n.Name, n.Bridge)}
	stdout, w := io.Pipe()
	d.p = &proc{name: "rnicd", cmd: exec.Command(argv[0], argv[1:]...), out: new(syncBuffer), done: make(chan struct{})}
	d.p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d.p.cmd.Stdout, d.p.cmd.Stderr = io.MultiWriter(d.p.out, w), d.p.out
	if err := d.p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.p.err = d.p.cmd.Wait(); w.Close(); close(d.p.done) }()
	t.Cleanup(d.stop)
	served := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		found := false
		for sc.Scan() {
			if !found && strings.HasPrefix(sc.Text(), "rnicd: serving rnic0, rnic1 on ") {
				found = true
				served <- true
			}
		}
		if !found {
			served <- false
		}
	}()
	select {
	case ok := <-served:
		if !ok {
			t.Fatalf("rnicd did not serve\n%s", d.p.report())
		}
	case <-time.After(programTimeout):
		t.Fatalf("rnicd did not serve\n%s", d.p.report())
	}
	// rnicd makes its socket 0600, root's: the programs' (a client
	// trusts a root daemon).
	if err := os.Chown(d.socket, build.uid, build.gid); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRpingTAP: rping between two NICs of a root rnicd on TAPs, RoCEv2
// (IB CM on QP1 across the bridge; the server binds the NIC's address,
// which is GID 1, not 0) and iWARP (MPA over each NIC's own TCP).
func TestRpingTAP(t *testing.T) {
	taptest.Require(t)
	needLibrary(t)
	needPrograms(t, "rping")
	n := taptest.New(t, 81)
	for i, transport := range []string{"roce", "iwarp"} {
		t.Run(transport, func(t *testing.T) {
			d := tapDaemon(t, n, transport, 10+10*i)
			port := cmPort()
			srv, cli := d.runCMPair(t, false,
				[]string{"rping", "-s", "-v", "-C", "10", "-p", port, "-a", d.addrs[0]},
				[]string{"rping", "-c", "-v", "-C", "10", "-p", port, "-a", d.addrs[0], "-I", d.addrs[1]})
			mustMatch(t, cli, `(?m)^ping data: rdma-ping-9: `)
			mustMatch(t, srv, `(?m)^server ping data: rdma-ping-9: `)
		})
	}
}

// TestCMCornersTAP: the rdma_cm corners that need NICs off loopback, on
// TAP-mode NICs of a root rnicd: the loopback address has no device there
// (ENODEV, as with rxe on eth0 only).
func TestCMCornersTAP(t *testing.T) {
	taptest.Require(t)
	needCMCorners(t)
	n := taptest.New(t, 97)
	d := tapDaemon(t, n, "roce", 10)
	finish(t, runCMCorner(t, d, nil, "noloopback"), d.p.report())
}
