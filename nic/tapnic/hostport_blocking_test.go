package tapnic_test

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/tap/taptest"
)

// TestHostPortBlockingClient: the client that handed its TAP over clears
// O_NONBLOCK on its own copy of the fd, which shares the NIC's open file
// description and so its flags. The NIC's reads from the port must still
// never wait in the kernel: frames keep flowing both ways, and with the
// port quiet, detaching (what reaping the client's session does) returns
// at once instead of waiting for a frame that never comes.
func TestHostPortBlockingClient(t *testing.T) {
	for _, vnet := range []bool{true, false} {
		t.Run(map[bool]string{true: "vnet", false: "plain"}[vnet], func(t *testing.T) { testHostPortBlockingClient(t, vnet) })
	}
}

func testHostPortBlockingClient(t *testing.T, vnet bool) {
	tn := taptest.New(t, 93)
	a := openNIC(t, tn, "rnica", nil, tn.Addr4(2))
	view := taptest.NewView(t, "rnica", vnet)
	p, err := a.AttachHostPort(dupFile(t, view.File))
	if err != nil {
		t.Fatal(err)
	}
	setBlocking(t, view.File)
	mac := a.Host().MAC()
	view.Configure(t, mac[:], 1500, tn.Addr4(2).String())
	peer := tn.BridgeV4.Addr().String()
	if out, err := view.Command("ping", "-c", "2", "-W", "5", peer).CombinedOutput(); err != nil {
		t.Fatalf("ping %s from the view through a port whose fd the client made blocking: %v\n%s", peer, err, out)
	}
	// A quiet port: no frame will wake a read that waits in the kernel.
	view.IP(t, "link", "set", view.TAP, "down")
	time.Sleep(100 * time.Millisecond) // the NIC's reader back in its read
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("detach: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("detaching the host port still waits after 5s: the NIC's read of the port waits in the kernel because the client cleared O_NONBLOCK")
	}
}

// setBlocking clears O_NONBLOCK on f's open file description, as a client
// may on its copy of the fd it handed over.
func setBlocking(t *testing.T, f *os.File) {
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
