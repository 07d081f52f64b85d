package udp

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/rnic/rnic/transport"
)

// openFDs counts this process's descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestSourcePortsReleaseSockets: a held port's socket lives until its last
// holder releases it; ports sent from without a holder keep at most
// maxIdlePorts sockets.
func TestSourcePortsReleaseSockets(t *testing.T) {
	a, b := openPair(t, false, nil)
	defer a.Close()
	defer b.Close()
	cb := collect(b, 1024)
	send := func(port uint16) []byte {
		t.Helper()
		if err := a.Send(roceFrame(a, b, frameOpts{srcPort: port})); err != nil {
			t.Fatal(err)
		}
		return cb.next(t)
	}
	base := openFDs(t)
	a.HoldSourcePort(0xC001)
	a.HoldSourcePort(0xC001)
	a.HoldSourcePort(0xC002)
	send(0xC001)
	send(0xC002)
	if s, h := a.OpenPorts(); s != 2 || h != 2 || openFDs(t) != base+2 {
		t.Fatalf("two held ports in use: %d sockets, %d held, %d new descriptors", s, h, openFDs(t)-base)
	}
	a.ReleaseSourcePort(0xC001)
	a.ReleaseSourcePort(0xC002)
	a.ReleaseSourcePort(0xC003) // never held: ignored
	if s, h := a.OpenPorts(); s != 1 || h != 1 {
		t.Fatalf("one port still held: %d sockets, %d held", s, h)
	}
	a.ReleaseSourcePort(0xC001)
	if s, h := a.OpenPorts(); s != 0 || h != 0 || openFDs(t) != base {
		t.Fatalf("all released: %d sockets, %d held, %d descriptors more than before", s, h, openFDs(t)-base)
	}
	// A frame from a released port still leaves from that port.
	if f := decode(t, send(0xC001), b.Port()); f.SrcPort() != 0xC001 {
		t.Errorf("source port %#x after release, want 0xc001", f.SrcPort())
	}
	for p := uint16(0xD000); p < 0xD000+3*maxIdlePorts; p++ {
		send(p)
	}
	if s, _ := a.OpenPorts(); s != maxIdlePorts || openFDs(t) != base+maxIdlePorts {
		t.Errorf("ports nobody holds: %d sockets, %d new descriptors, want %d", s, openFDs(t)-base, maxIdlePorts)
	}
}

// TestReleaseDuringSends: releasing a port while frames leave from it
// never fails a send (the socket closes after its last send) and leaves
// no socket behind.
func TestReleaseDuringSends(t *testing.T) {
	a, b := openPair(t, false, nil)
	defer a.Close()
	defer b.Close()
	frame := roceFrame(a, b, frameOpts{srcPort: 0xC123})
	base := openFDs(t)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				var err error
				if i%2 == 0 {
					err = a.Send(frame)
				} else {
					err = a.SendBatch([][]byte{frame, frame})
				}
				if errors.Is(err, transport.ErrClosed) {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	for i := 0; i < 500; i++ {
		a.HoldSourcePort(0xC123)
		a.ReleaseSourcePort(0xC123)
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("a send racing a release: %v", err)
	default:
	}
	// The last sends left the socket on the idle list; holding and
	// releasing the port closes it.
	a.HoldSourcePort(0xC123)
	a.ReleaseSourcePort(0xC123)
	if s, _ := a.OpenPorts(); s != 0 || openFDs(t) != base {
		t.Errorf("%d sockets, %d descriptors more than before", s, openFDs(t)-base)
	}
}
