package dropin

// A program's kernel network through a host port (TAP mode): the test
// stands in for rnic exec's view, a namespace whose TAP carries rnic0's
// MAC and address and is attached to rnic0 through rnicd
// (client.AttachHostPort). Debian's ibv_rc_pingpong serves inside it, as
// nobody, its TCP exchange in the view's kernel; its client, on rnic1 in
// the bridge's namespace, reaches it at rnic0's address across the bridge:
// a program's address and its RDMA device's are the same, as on rxe.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/tap/taptest"
)

// startIn starts a program (start's way) inside namespace ns.
func startIn(t *testing.T, ns, name string, argv ...string) *proc {
	t.Helper()
	var p *proc
	if err := taptest.InNetns(ns, func() { p = start(t, name, nil, nil, argv...) }); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHostPortPingpong(t *testing.T) {
	taptest.Require(t)
	needLibrary(t)
	needPrograms(t, "ibv_rc_pingpong")
	n := taptest.New(t, 86)
	d := tapDaemon(t, n, "roce", 20)
	view := taptest.NewView(t, "rnic0", true)
	mac, closer, err := client.AttachHostPort(d.socket, "rnic0", view.File)
	if err != nil {
		t.Fatalf("%v\n%s", err, d.p.report())
	}
	defer closer.Close()
	if _, _, err := client.AttachHostPort(d.socket, "rnic0", view.File); !errors.Is(err, verbs.ErrBusy) {
		t.Fatalf("second attach: %v, want EBUSY", err)
	}
	view.Configure(t, mac, 1500, n.Addr4(20).String())

	const port = 18600
	deadline := time.After(programTimeout)
	srv := startIn(t, view.Name, "server", lineBuffered([]string{build.rnic, "exec", "-S", d.socket, "--",
		"ibv_rc_pingpong", "-d", "rnic0", "-g", "1", "-p", fmt.Sprint(port)})...)
	for !listening(srv.cmd.Process.Pid, port) {
		select {
		case <-srv.done:
			t.Fatalf("the server ended before listening\n%s", srv.report())
		case <-deadline:
			t.Fatalf("the server did not listen\n%s", srv.report())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cli := startIn(t, n.Name, "client", lineBuffered([]string{build.rnic, "exec", "-S", d.socket, "--",
		"ibv_rc_pingpong", "-d", "rnic1", "-g", "1", "-p", fmt.Sprint(port), d.addrs[0]})...)
	cli.wait(deadline)
	srv.wait(deadline)
	if !srv.ok() || !cli.ok() {
		t.Fatalf("pingpong through the host port failed\n%s\n%s\n%s", srv.report(), cli.report(), d.p.report())
	}
	mustMatch(t, cli, `remote address: .* GID ::ffff:`+strings.ReplaceAll(d.addrs[0], ".", `\.`))
	mustMatch(t, srv, `(?m)^8192000 bytes in `)

	// The attachment ends with its connection: rnic0 then takes a host
	// port again (once the daemon has seen the close).
	closer.Close()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		_, c, err := client.AttachHostPort(d.socket, "rnic0", view.File)
		if err == nil {
			c.Close()
			break
		}
		if !errors.Is(err, verbs.ErrBusy) || time.Since(start) > 20*time.Second {
			t.Fatalf("attach after the first closed: %v", err)
		}
	}
}
