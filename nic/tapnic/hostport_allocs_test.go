package tapnic

import (
	"net"
	"net/netip"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/tap"
	"github.com/rnic/rnic/tap/taptest"
)

// TestHostPortAllocs: both directions of a host port's frame path allocate
// nothing per frame: a frame from the wire classified and written to the
// port, a frame from the port written to the wire.
func TestHostPortAllocs(t *testing.T) {
	tn := taptest.New(t, 88)
	n, err := Open(Config{Name: "rnica", TAP: "t-rnica", Netns: tn.Name, Bridge: tn.Bridge,
		Prefixes: []netip.Prefix{tn.Addr4(2)}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	view := taptest.NewView(t, "rnica", true)
	fd, err := unix.FcntlInt(view.File.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := n.AttachHostPort(os.NewFile(uintptr(fd), "tap"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mac := n.Host().MAC()
	view.Configure(t, net.HardwareAddr(mac[:]), 1500, tn.Addr4(2).String())

	// A TCP segment to a port of nobody in the NIC's stack: the port's.
	own := tn.Addr4(2).Addr().As4()
	f := make([]byte, 14+20+20)
	copy(f, mac[:])
	f[12], f[13] = 0x08, 0x00
	ip := f[14:]
	ip[0], ip[2], ip[3], ip[8], ip[9] = 0x45, 0, 40, 64, 6
	copy(ip[12:], []byte{10, 88, 0, 1})
	copy(ip[16:], own[:])
	ip[20+1], ip[20+3], ip[20+12] = 99, 22, 0x50
	before := p.Counters().ToPortFrames
	if allocs := testing.AllocsPerRun(100, func() { p.divert(f, tap.VnetHdr{}) }); allocs != 0 {
		t.Errorf("wire → port allocates %.1f times per frame", allocs)
	}
	if p.Counters().ToPortFrames == before {
		t.Fatal("no frame reached the port")
	}
	out := append([]byte(nil), f...)
	copy(out[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(out[6:12], mac[:])
	if allocs := testing.AllocsPerRun(100, func() { n.host.WriteWire(out, tap.VnetHdr{}) }); allocs != 0 {
		t.Errorf("port → wire allocates %.1f times per frame", allocs)
	}
}
