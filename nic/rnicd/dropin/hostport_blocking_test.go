package dropin

import (
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/tap/taptest"
)

// TestHostPortBlockingClient: a client attaches its TAP as rnic0's host
// port, then clears O_NONBLOCK on its own copy of the fd (one open file
// description with the daemon's, flags included) and leaves the TAP
// quiet. The daemon's reader of the port must not wait in the kernel:
// another client is served meanwhile, the client's session is reaped once
// it goes, and SIGTERM ends rnicd promptly. With plain reads the reader waited in read(2) for a frame that
// never came, and detaching, reaping and SIGTERM waited with it.
func TestHostPortBlockingClient(t *testing.T) {
	taptest.Require(t)
	n := taptest.New(t, 94)
	d := tapDaemon(t, n, "roce", 20)
	view := taptest.NewView(t, "rnic0", true)
	mac, closer, err := client.AttachHostPort(d.socket, "rnic0", view.File)
	if err != nil {
		t.Fatalf("%v\n%s", err, d.p.report())
	}
	clearNonblock(t, view.File)
	// Frames through the port wake the daemon's reader (a reader parked
	// in the poller never reads); then the port goes quiet.
	view.Configure(t, mac, 1500, n.Addr4(20).String())
	peer := n.BridgeV4.Addr().String()
	if out, err := view.Command("ping", "-c", "2", "-W", "5", peer).CombinedOutput(); err != nil {
		t.Fatalf("ping %s through the port: %v\n%s\n%s", peer, err, out, d.p.report())
	}
	view.IP(t, "link", "set", view.TAP, "down")
	time.Sleep(100 * time.Millisecond) // the daemon's reader back at the quiet port

	other, err := ibv.Open(ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic1", Socket: d.socket})
	if err != nil {
		t.Fatalf("another client: %v\n%s", err, d.p.report())
	}
	if _, err := other.AllocPD(); err != nil {
		t.Fatalf("another client's ALLOC_PD: %v", err)
	}
	other.Close()

	// Its session is reaped once it goes: no client is left (the port
	// alone is no proof: detaching frees it before closing the fd).
	closer.Close()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		st, err := client.QueryStat(d.socket)
		if err != nil {
			t.Fatalf("rnic stat: %v\n%s", err, d.p.report())
		}
		if len(st.Clients) == 0 {
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("15 s after the blocking client went, clients %+v are left (its session not reaped)\n%s", st.Clients, d.p.report())
		}
	}

	d.p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.p.done:
	case <-time.After(15 * time.Second):
		d.p.kill()
		t.Fatalf("rnicd still ran 15 s after SIGTERM\n%s", d.p.report())
	}
}

// clearNonblock clears O_NONBLOCK on f's open file description, as a
// client may on its copy of a descriptor it handed the daemon.
func clearNonblock(t *testing.T, f *os.File) {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ferr error
	raw.Control(func(fd uintptr) {
		var fl int
		if fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0); ferr == nil {
			_, ferr = unix.FcntlInt(fd, unix.F_SETFL, fl&^unix.O_NONBLOCK)
		}
	})
	if ferr != nil {
		t.Fatal(ferr)
	}
}
