package tap

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// newGSONetns creates a namespace gso<random> for the offload tests (lo
// up, IPv6 DAD off so the kernel's addresses are usable at once), deleted
// when the test ends.
func newGSONetns(t *testing.T) *testNetns {
	t.Helper()
	ns := newNamedNetns(t, "gso")
	ns.sysctl("net.ipv6.conf.default.accept_dad", "0")
	ns.sysctl("net.ipv6.conf.all.accept_dad", "0")
	return ns
}

// offloadNIC is a Host and a TCPStack on an offload Device whose kernel
// side has kernelAddr, the NIC nicAddr (same prefix).
type offloadNIC struct {
	dev  *Device
	host *Host
	tcp  *TCPStack
}

func openOffloadNIC(t *testing.T, ns *testNetns, mtu int, kernel, nic netip.Prefix, offload bool) *offloadNIC {
	t.Helper()
	dev, err := OpenDevice(DeviceConfig{Name: "gso0", Netns: ns.name, MTU: mtu, Addrs: []netip.Prefix{kernel}, Offload: offload})
	if err != nil {
		t.Fatal(err)
	}
	if dev.Offload() != offload {
		t.Fatalf("Device.Offload() = %v, asked for %v", dev.Offload(), offload)
	}
	h, err := NewHost(HostConfig{IO: dev, MAC: hostMAC, Prefixes: []netip.Prefix{nic}, MTU: mtu})
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	// Wired as nic/tapnic wires them: frames framed in place, receive
	// checksum offload.
	cfg := TCPStackConfig{Prefixes: []netip.Prefix{nic}, MTU: mtu, Output: h.SendIP}
	if h.Offload() {
		cfg.OutputFrame = h.SendFrame
	}
	s, err := NewTCPStack(cfg)
	if err != nil {
		h.Close()
		t.Fatal(err)
	}
	h.SetTCP(s.Deliver)
	h.SetTCPValidated(s.DeliverValidated)
	h.Start()
	t.Cleanup(func() {
		s.Close()
		h.Close()
	})
	return &offloadNIC{dev: dev, host: h, tcp: s}
}

// listenIn listens on addr in the namespace: the kernel's TCP.
func listenIn(t *testing.T, ns *testNetns, addr netip.AddrPort) net.Listener {
	t.Helper()
	h, err := openNetns(ns.name)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var l net.Listener
	// An IPv6 address is usable once the kernel's address work has run,
	// a moment after the link came up, even without DAD.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := inNetns(h, func() error {
			var err error
			l, err = net.Listen("tcp", addr.String())
			return err
		})
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRNOTAVAIL) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// offloadExchange sends n random bytes each way between the NIC's TCP and
// the kernel's over one connection and checks both arrive intact.
func offloadExchange(t *testing.T, nic *offloadNIC, l net.Listener, local netip.Addr, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	up, down := make([]byte, n), make([]byte, n)
	rand.Read(up)
	rand.Read(down)
	kernelErr := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			kernelErr <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(60 * time.Second))
		wrote := make(chan error, 1)
		go func() { _, err := c.Write(down); wrote <- err }()
		got := make([]byte, n)
		if _, err := io.ReadFull(c, got); err != nil {
			kernelErr <- fmt.Errorf("kernel read: %w", err)
			return
		}
		if !bytes.Equal(got, up) {
			kernelErr <- fmt.Errorf("kernel got %x…, sent %x…", sha256.Sum256(got), sha256.Sum256(up))
			return
		}
		kernelErr <- <-wrote
	}()
	remote := netip.MustParseAddrPort(l.Addr().String())
	c, err := nic.tcp.Dial(ctx, local, remote)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	wrote := make(chan error, 1)
	go func() { _, err := c.Write(up); wrote <- err }()
	got := make([]byte, n)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("NIC read: %v (counters %+v)", err, nic.host.Counters())
	}
	if !bytes.Equal(got, down) {
		t.Fatal("NIC got other bytes than the kernel sent")
	}
	if err := <-wrote; err != nil {
		t.Fatalf("NIC write: %v", err)
	}
	if err := <-kernelErr; err != nil {
		t.Fatal(err)
	}
}

// TestOffloadKernelTCP: with offload, several MiB each way between the
// NIC's TCP and the kernel's TCP on the TAP's far side arrive intact, the
// NIC sent super-segments the kernel segmented (or took whole), and the
// kernel's super-segments with partial checksums were taken whole; over
// IPv4 at MTU 1500 and IPv6 at MTU 9000. Without offload nothing of it is
// used and the data still arrives.
func TestOffloadKernelTCP(t *testing.T) {
	cases := []struct {
		name            string
		mtu             int
		kernel, nic     string
		offload         bool
		wantSuperFrames bool
	}{
		{"ipv4-mtu1500", 1500, "10.88.1.1/24", "10.88.1.2/24", true, true},
		{"ipv6-mtu9000", 9000, "fd88::1/64", "fd88::2/64", true, true},
		{"ipv4-off", 1500, "10.88.1.1/24", "10.88.1.2/24", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := newGSONetns(t)
			kernel, nicP := netip.MustParsePrefix(c.kernel), netip.MustParsePrefix(c.nic)
			nic := openOffloadNIC(t, ns, c.mtu, kernel, nicP, c.offload)
			l := listenIn(t, ns, netip.AddrPortFrom(kernel.Addr(), 0))
			offloadExchange(t, nic, l, nicP.Addr(), 8<<20)
			cnt := nic.host.Counters()
			t.Logf("counters: gso_tx %d (%d segments), gso_rx %d, csum_finished %d, csum_validated %d, rx %d, tx %d frames",
				cnt.GSOTx, cnt.GSOTxSegments, cnt.GSORx, cnt.CsumFinished, cnt.CsumValidated, cnt.RxFrames, cnt.TxFrames)
			if got := nic.tcp.Stack().Stats().TCP.ChecksumErrors.Value(); got != 0 {
				t.Errorf("netstack counted %d TCP checksum errors", got)
			}
			if cnt.VnetMalformed != 0 || cnt.TxErrors != 0 {
				t.Errorf("vnet_malformed %d, tx_errors %d", cnt.VnetMalformed, cnt.TxErrors)
			}
			if !c.wantSuperFrames {
				if cnt.GSOTx+cnt.GSORx+cnt.CsumFinished+cnt.CsumValidated != 0 {
					t.Errorf("offload off, yet counters %+v", cnt)
				}
				return
			}
			if cnt.GSOTx == 0 || cnt.GSOTxSegments <= cnt.GSOTx {
				t.Errorf("gso_tx %d, gso_tx_segments %d: no super-segments sent", cnt.GSOTx, cnt.GSOTxSegments)
			}
			// The kernel's TCP leaves its checksums partial: taken as
			// validated (receive checksum offload), never finished.
			if cnt.GSORx == 0 || cnt.CsumValidated == 0 {
				t.Errorf("gso_rx %d, csum_validated %d: no super-segments received", cnt.GSORx, cnt.CsumValidated)
			}
			// 8 MiB each way in far fewer frames than wire segments.
			if wire := uint64(8<<20) / uint64(c.mtu-100); cnt.TxFrames > wire/2 {
				t.Errorf("%d frames sent for %d wire segments' worth", cnt.TxFrames, wire)
			}
		})
	}
}

// BenchmarkTCPOverTAPs: netstack to netstack through two TAPs on a bridge,
// with and without segmentation offload; bytes per op are one 64 KiB
// write. Reports the host counters' frames per MiB and netstack's
// retransmissions.
func BenchmarkTCPOverTAPs(b *testing.B) {
	for _, offload := range []bool{true, false} {
		b.Run(fmt.Sprintf("offload=%v", offload), func(b *testing.B) {
			benchTCPOverTAPs(b, offload)
		})
	}
}

func benchTCPOverTAPs(b *testing.B, offload bool) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	var rb [4]byte
	rand.Read(rb[:])
	ns := "gsob" + hex.EncodeToString(rb[:])
	for _, args := range [][]string{{"netns", "add", ns}, {"-n", ns, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0"},
		{"-n", ns, "link", "set", "br0", "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			b.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	b.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	open := func(name string, mac [6]byte, p netip.Prefix) (*Host, *TCPStack) {
		dev, err := OpenDevice(DeviceConfig{Name: name, Netns: ns, Bridge: "br0", Offload: offload})
		if err != nil {
			b.Fatal(err)
		}
		h, err := NewHost(HostConfig{IO: dev, MAC: mac, Prefixes: []netip.Prefix{p}})
		if err != nil {
			b.Fatal(err)
		}
		cfg := TCPStackConfig{Prefixes: []netip.Prefix{p}, Output: h.SendIP}
		if h.Offload() {
			cfg.OutputOffload = h.SendIPOffload
		}
		s, err := NewTCPStack(cfg)
		if err != nil {
			b.Fatal(err)
		}
		h.SetTCP(s.Deliver)
		h.Start()
		b.Cleanup(func() { s.Close(); h.Close() })
		return h, s
	}
	pa, pb := netip.MustParsePrefix("10.88.7.1/24"), netip.MustParsePrefix("10.88.7.2/24")
	ha, sa := open("gsoa", [6]byte{2, 0, 0, 0, 7, 1}, pa)
	hb, sb := open("gsob", [6]byte{2, 0, 0, 0, 7, 2}, pb)
	l, err := sb.Listen(netip.AddrPortFrom(pb.Addr(), 7000))
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan int64, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- -1
			return
		}
		n, _ := io.Copy(io.Discard, c)
		done <- n
	}()
	c, err := sa.Dial(context.Background(), pa.Addr(), netip.AddrPortFrom(pb.Addr(), 7000))
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 65536)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	<-done
	b.StopTimer()
	ca, cb := ha.Counters(), hb.Counters()
	mib := float64(b.N) / 16
	b.ReportMetric(float64(ca.TxFrames)/mib, "txframes/MiB")
	b.ReportMetric(float64(cb.RxFrames)/mib, "rxframes/MiB")
	st := sa.Stack().Stats().TCP
	b.ReportMetric(float64(st.Retransmits.Value()), "retransmits")
	b.ReportMetric(float64(st.Timeouts.Value()), "timeouts")
}

// BenchmarkDeviceWrite: one 60-byte frame written to a TAP (in a
// namespace of its own), plain and behind a virtio_net_hdr (writev), and
// the allocations of each.
func BenchmarkDeviceWrite(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	var rb [4]byte
	rand.Read(rb[:])
	ns := "gsow" + hex.EncodeToString(rb[:])
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		b.Fatalf("ip netns add %s: %v: %s", ns, err, out)
	}
	b.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	for _, offload := range []bool{false, true} {
		b.Run(fmt.Sprintf("offload=%v", offload), func(b *testing.B) {
			dev, err := OpenDevice(DeviceConfig{Name: "gsow0", Netns: ns, Offload: offload})
			if err != nil {
				b.Fatal(err)
			}
			defer dev.Close()
			f := make([]byte, 60)
			copy(f, broadcastMAC[:])
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := dev.WriteFrame(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
