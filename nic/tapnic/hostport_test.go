package tapnic_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/tap"
	"github.com/rnic/rnic/tap/taptest"
)

// inNS runs fn on a thread inside namespace ns: sockets fn makes live
// there.
func inNS(t *testing.T, ns string, fn func()) {
	t.Helper()
	if err := taptest.InNetns(ns, fn); err != nil {
		t.Fatal(err)
	}
}

// dupFile is a second fd of f: the NIC takes one, the view keeps its own.
func dupFile(t *testing.T, f *os.File) *os.File {
	t.Helper()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fd), "tap")
}

// listenIn listens on addr inside ns.
func listenIn(t *testing.T, ns, addr string) net.Listener {
	t.Helper()
	var l net.Listener
	var err error
	inNS(t, ns, func() { l, err = net.Listen("tcp", addr) })
	if err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// dialIn connects to addr from inside ns.
func dialIn(t *testing.T, ns, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	var err error
	inNS(t, ns, func() { c, err = net.DialTimeout("tcp", addr, 20*time.Second) })
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// transfer sends n bytes over c to the listener's accepted connection,
// which echoes a checksum-like tail back, and returns the throughput.
func transfer(t *testing.T, l net.Listener, c net.Conn, n int) float64 {
	t.Helper()
	got := make(chan error, 1)
	go func() {
		s, err := l.Accept()
		if err != nil {
			got <- err
			return
		}
		defer s.Close()
		m, err := io.Copy(io.Discard, s)
		if err == nil && m != int64(n) {
			err = errors.New("short transfer")
		}
		if err == nil {
			_, err = s.Write([]byte("ok"))
		}
		got <- err
	}()
	buf := bytes.Repeat([]byte("rnic host port "), 64<<10/15)
	start := time.Now()
	for sent := 0; sent < n; {
		k := min(len(buf), n-sent)
		if _, err := c.Write(buf[:k]); err != nil {
			t.Fatalf("write after %d bytes: %v", sent, err)
		}
		sent += k
	}
	c.(interface{ CloseWrite() error }).CloseWrite()
	ack := make([]byte, 2)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(c, ack); err != nil || string(ack) != "ok" {
		t.Fatalf("end of transfer: %q %v", ack, err)
	}
	if err := <-got; err != nil {
		t.Fatalf("receiver: %v", err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// TestHostPort: a TAP in a namespace of the test's (a program's view)
// attached as rnica's host port, with rnica's MAC and addresses. The view's
// kernel pings and talks TCP to a peer kernel on the bridge, both ways,
// while rnica's own TCP and RoCEv2 keep working on the same addresses;
// detached, the view is cut off again.
// The view's TAP has a virtio_net_hdr (super-segments pass through) or
// not (the NIC's TAP then asks the kernel to segment).
func TestHostPort(t *testing.T) {
	for _, vnet := range []bool{true, false} {
		t.Run(map[bool]string{true: "vnet", false: "plain"}[vnet], func(t *testing.T) { testHostPort(t, vnet) })
	}
}

func testHostPort(t *testing.T, vnet bool) {
	tn := taptest.New(t, 84)
	a := openNIC(t, tn, "rnica", nil, tn.Addr4(2), tn.Addr6(2))
	b := openNIC(t, tn, "rnicb", nil, tn.Addr4(3))
	view := taptest.NewView(t, "rnica", vnet)
	peer4, peer6 := tn.BridgeV4.Addr().String(), tn.BridgeV6.Addr().String()
	a4 := tn.Addr4(2).Addr().String()

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if _, err := a.AttachHostPort(pr); !errors.Is(err, tap.ErrNotTAP) || !errors.Is(err, verbs.ErrInvalid) {
		t.Fatalf("attach a pipe: %v, want ErrNotTAP and ErrInvalid", err)
	}
	p, err := a.AttachHostPort(dupFile(t, view.File))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AttachHostPort(dupFile(t, view.File)); !errors.Is(err, verbs.ErrBusy) {
		t.Fatalf("second attach: %v, want ErrBusy", err)
	}
	mac := a.Host().MAC()
	view.Configure(t, net.HardwareAddr(mac[:]), 1500, tn.Addr4(2).String(), tn.Addr6(2).String())

	// Ping: the view's kernel reaches the peer (ARP and ND through the
	// port); the peer's ping of the address is the NIC's to answer.
	for _, dst := range []string{peer4, peer6} {
		if out, err := view.Command("ping", "-c", "2", "-W", "5", dst).CombinedOutput(); err != nil {
			t.Fatalf("ping %s from the view: %v\n%s", dst, err, out)
		}
	}
	if out, ok := tn.Ping(tn.Addr4(2).Addr(), 10*time.Second); !ok {
		t.Fatalf("ping of rnica from the peer: %s", out)
	}

	// TCP both ways between the kernels, a few MB each.
	const size = 8 << 20
	up := transfer(t, listenIn(t, tn.Name, peer4+":5001"), dialIn(t, view.Name, peer4+":5001"), size)
	down := transfer(t, listenIn(t, view.Name, a4+":5002"), dialIn(t, tn.Name, a4+":5002"), size)
	t.Logf("kernel TCP through the host port: view→peer %.1f MB/s, peer→view %.1f MB/s", up/1e6, down/1e6)
	// ... and over IPv6 (neighbour discovery through the port).
	a6 := "[" + tn.Addr6(2).Addr().String() + "]"
	transfer(t, listenIn(t, tn.Name, "["+peer6+"]:5004"), dialIn(t, view.Name, "["+peer6+"]:5004"), 1<<20)
	transfer(t, listenIn(t, view.Name, a6+":5005"), dialIn(t, tn.Name, a6+":5005"), 1<<20)

	// The NIC's own TCP on the same address: a listener of its stack
	// gets the peer's connection, not the view.
	nl, err := a.Listen(netip.MustParseAddrPort(a4 + ":18515"))
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	transfer(t, nl, dialIn(t, tn.Name, a4+":18515"), 1<<20)
	// ... and its own dial out (the answers are its endpoint's).
	pl := listenIn(t, tn.Name, peer4+":5003")
	c, err := a.Dial(t.Context(), netip.MustParseAddrPort(peer4+":5003"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	transfer(t, pl, c, 1<<20)

	// RoCEv2 between rnica and rnicb, unaffected.
	x, y := pair(t, a, b, tn.Addr4(2).Addr(), tn.Addr4(3).Addr(), 14, 7)
	copy(x.buf, strings.Repeat("roce", 8<<10))
	if wc := post(t, x, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: sge(x, 0, 32<<10),
		RemoteAddr: y.mr.Addr(), RKey: y.mr.RKey()}, 10*time.Second); wc.Status != verbs.WCSuccess {
		t.Fatalf("WRITE: %v", wc.Status)
	}
	if !bytes.Equal(x.buf[:32<<10], y.buf[:32<<10]) {
		t.Fatal("WRITE: data differs")
	}

	cnt := p.Counters()
	t.Logf("host port counters %+v", cnt)
	// (ToPortErrors may count frames that came before the view's TAP was
	// up: a TAP that is down refuses them.)
	if cnt.ToPortFrames == 0 || cnt.FromPortFrames == 0 || cnt.Both == 0 || cnt.ForeignSource != 0 {
		t.Errorf("counters %+v: want frames both ways, neighbour answers to both, no foreign source", cnt)
	}
	if hc := a.Host().Counters(); hc.RoCERx == 0 {
		t.Errorf("host counters %+v: no RoCE received", hc)
	}

	// Detached, the view's kernel no longer reaches the wire, and the
	// NIC takes a host port again.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if out, err := view.Command("ping", "-c", "1", "-W", "2", peer4).CombinedOutput(); err == nil {
		t.Fatalf("ping through a detached host port answered:\n%s", out)
	}
	p2, err := a.AttachHostPort(dupFile(t, view.File))
	if err != nil {
		t.Fatalf("attach after detach: %v", err)
	}
	if out, err := view.Command("ping", "-c", "1", "-W", "5", peer4).CombinedOutput(); err != nil {
		t.Fatalf("ping after re-attach: %v\n%s", err, out)
	}
	p2.Close()
}
