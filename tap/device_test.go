// Tests of the TAP device: creating and attaching, the configuration the
// kernel ends up with, frames both ways, Close, and failures that must
// leave nothing behind. The root tests run in a namespace of their own.

package tap

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDeviceConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  DeviceConfig
		want string // substring of the error; "" for valid
	}{
		{"ok", DeviceConfig{Name: "t0"}, ""},
		{"ok 15 bytes", DeviceConfig{Name: strings.Repeat("t", 15), MTU: 9000}, ""},
		{"ok min mtu", DeviceConfig{Name: "t0", MTU: 576, Bridge: "br0"}, ""},
		{"empty name", DeviceConfig{}, "empty"},
		{"16 bytes", DeviceConfig{Name: strings.Repeat("t", 16)}, "longer than 15"},
		{"slash", DeviceConfig{Name: "t/0"}, "contains"},
		{"colon", DeviceConfig{Name: "t:0"}, "contains"},
		{"space", DeviceConfig{Name: "t 0"}, "contains"},
		{"tab", DeviceConfig{Name: "t\t0"}, "contains"},
		{"dot", DeviceConfig{Name: "."}, "not a valid"},
		{"dotdot", DeviceConfig{Name: ".."}, "not a valid"},
		{"bad bridge", DeviceConfig{Name: "t0", Bridge: strings.Repeat("b", 16)}, "bridge name"},
		{"mtu low", DeviceConfig{Name: "t0", MTU: 575}, "out of range"},
		{"mtu high", DeviceConfig{Name: "t0", MTU: 9001}, "out of range"},
		{"mtu negative", DeviceConfig{Name: "t0", MTU: -1}, "out of range"},
		{"invalid prefix", DeviceConfig{Name: "t0", Addrs: []netip.Prefix{{}}}, "invalid address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestPrefixIPNetKeepsHostPart(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"10.1.2.3/24", "10.1.2.3/24"},
		{"fd00::9/64", "fd00::9/64"},
		{"::ffff:10.1.2.3/24", "10.1.2.3/24"},
	} {
		got := prefixIPNet(netip.MustParsePrefix(tc.in))
		if got.String() != tc.want {
			t.Errorf("prefixIPNet(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestDeviceCreate creates a TAP in a namespace with a bridge and a jumbo
// MTU, checks what the kernel says about it, and that Close removes it.
func TestDeviceCreate(t *testing.T) {
	ns := newTestNetns(t)
	ns.addBridge("br0")

	d, err := OpenDevice(DeviceConfig{Name: "rt0", Netns: ns.name, Bridge: "br0", MTU: 9000})
	if err != nil {
		t.Fatalf("OpenDevice: %v", err)
	}
	if !d.Created() {
		t.Error("Created() = false for a TAP that did not exist")
	}
	if d.Name() != "rt0" || d.MTU() != 9000 {
		t.Errorf("Name, MTU = %q, %d; want rt0, 9000", d.Name(), d.MTU())
	}
	out := ns.ip("-d", "-o", "link", "show", "dev", "rt0")
	for _, want := range []string{"tun type tap", "pi off", "mtu 9000", "master br0", "qlen 4096", "<BROADCAST,MULTICAST,UP,LOWER_UP>"} {
		if !strings.Contains(out, want) {
			t.Errorf("ip -d link show rt0 lacks %q:\n%s", want, out)
		}
	}
	mac := d.KernelMAC()
	if !strings.Contains(out, "link/ether "+net.HardwareAddr(mac[:]).String()) {
		t.Errorf("KernelMAC %s is not the link's:\n%s", net.HardwareAddr(mac[:]), out)
	}

	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if ns.linkExists("rt0") {
		t.Error("the TAP we created survived Close")
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestDeviceAttach attaches to a persistent TAP, changes its MTU, master and
// addresses, and checks that Close leaves it in place as it was (but up).
func TestDeviceAttach(t *testing.T) {
	ns := newTestNetns(t)
	ns.addBridge("br0")
	ns.ip("tuntap", "add", "rt1", "mode", "tap")
	before := ns.ip("-d", "-o", "link", "show", "dev", "rt1")
	if !strings.Contains(before, "persist on") || !strings.Contains(before, "mtu 1500") {
		t.Fatalf("unexpected starting point:\n%s", before)
	}

	addrs := []netip.Prefix{netip.MustParsePrefix("10.99.0.9/24"), netip.MustParsePrefix("fd00:99::9/64")}
	d, err := OpenDevice(DeviceConfig{Name: "rt1", Netns: ns.name, Bridge: "br0", MTU: 4000, Addrs: addrs})
	if err != nil {
		t.Fatalf("OpenDevice: %v", err)
	}
	if d.Created() {
		t.Error("Created() = true for an existing TAP")
	}
	if d.MTU() != 4000 {
		t.Errorf("MTU() = %d, want 4000", d.MTU())
	}
	during := ns.ip("-d", "-o", "link", "show", "dev", "rt1")
	for _, want := range []string{"mtu 4000", "master br0", "persist on", ",UP,"} {
		if !strings.Contains(during, want) {
			t.Errorf("while attached, rt1 lacks %q:\n%s", want, during)
		}
	}
	addrOut := ns.ip("-o", "addr", "show", "dev", "rt1")
	for _, p := range addrs {
		if !strings.Contains(addrOut, p.String()) {
			t.Errorf("while attached, rt1 lacks address %s:\n%s", p, addrOut)
		}
	}

	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !ns.linkExists("rt1") {
		t.Fatal("Close removed a persistent TAP we only attached to")
	}
	after := ns.ip("-d", "-o", "link", "show", "dev", "rt1")
	for _, want := range []string{"mtu 1500", "persist on", ",UP"} {
		if !strings.Contains(after, want) {
			t.Errorf("after Close, rt1 lacks %q:\n%s", want, after)
		}
	}
	if strings.Contains(after, "master") {
		t.Errorf("after Close, rt1 is still enslaved:\n%s", after)
	}
	addrOut = ns.ip("-o", "addr", "show", "dev", "rt1")
	for _, p := range addrs {
		if strings.Contains(addrOut, p.Addr().String()) {
			t.Errorf("after Close, rt1 still has %s:\n%s", p, addrOut)
		}
	}

	// Attaching again works: Close really let go of the queue.
	d, err = OpenDevice(DeviceConfig{Name: "rt1", Netns: ns.name})
	if err != nil {
		t.Fatalf("OpenDevice again: %v", err)
	}
	if d.Created() || d.MTU() != 1500 {
		t.Errorf("second attach: Created, MTU = %v, %d; want false, 1500", d.Created(), d.MTU())
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestDeviceFrames sends an ARP request for the bridge's address through
// the TAP and waits for the kernel's reply, then checks that Close wakes a
// blocked reader.
func TestDeviceFrames(t *testing.T) {
	ns := newTestNetns(t)
	ns.addBridge("br0")
	ns.ip("addr", "add", "10.98.0.1/24", "dev", "br0")
	d, err := OpenDevice(DeviceConfig{Name: "rt2", Netns: ns.name, Bridge: "br0"})
	if err != nil {
		t.Fatalf("OpenDevice: %v", err)
	}
	t.Cleanup(func() { d.Close() })

	ourMAC := [6]byte{0x02, 0x00, 0x00, 0xaa, 0xbb, 0xcc}
	ourIP := netip.MustParseAddr("10.98.0.2")
	bridgeIP := netip.MustParseAddr("10.98.0.1")
	request := deviceARPFrame(1, ourMAC, ourIP, [6]byte{}, bridgeIP)

	frames := make(chan []byte, 64)
	readErr := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			b := make([]byte, 2048)
			n, err := d.ReadFrame(b)
			if err != nil {
				readErr <- err
				return
			}
			frames <- b[:n]
		}
	})

	// The bridge may drop the very first request while the port comes up,
	// so repeat it until the reply arrives (bounded).
	deadline := time.After(10 * time.Second)
	resend := time.NewTicker(200 * time.Millisecond)
	defer resend.Stop()
	if err := d.WriteFrame(request); err != nil {
		t.Fatalf("WriteFrame: %v", err)
	}
	var reply []byte
	for reply == nil {
		select {
		case f := <-frames:
			if deviceIsARPReply(f, ourMAC, bridgeIP, ourIP) {
				reply = f
			}
		case <-resend.C:
			if err := d.WriteFrame(request); err != nil {
				t.Fatalf("WriteFrame: %v", err)
			}
		case err := <-readErr:
			t.Fatalf("ReadFrame: %v", err)
		case <-deadline:
			t.Fatal("no ARP reply from the namespace's kernel within 10s")
		}
	}
	// The reply comes from the bridge's MAC.
	brMAC := ns.ip("-o", "link", "show", "dev", "br0")
	if !strings.Contains(brMAC, net.HardwareAddr(reply[6:12]).String()) {
		t.Errorf("ARP reply from %s, not the bridge:\n%s", net.HardwareAddr(reply[6:12]), brMAC)
	}

	// Close wakes the reader, blocked (or about to block) in ReadFrame.
	closed := time.Now()
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-readErr:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("ReadFrame after Close: %v, want os.ErrClosed", err)
		}
		if d := time.Since(closed); d > 2*time.Second {
			t.Errorf("ReadFrame took %v to return after Close", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock ReadFrame")
	}
	wg.Wait()
	if _, err := d.ReadFrame(make([]byte, 64)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("ReadFrame on a closed device: %v, want os.ErrClosed", err)
	}
	if err := d.WriteFrame(request); !errors.Is(err, os.ErrClosed) {
		t.Errorf("WriteFrame on a closed device: %v, want os.ErrClosed", err)
	}
}

// TestDeviceReadTruncates checks the FrameIO promise that a frame longer
// than the buffer is cut to it, not an error: the ARP reply (42 bytes) is
// read into 20.
func TestDeviceReadTruncates(t *testing.T) {
	ns := newTestNetns(t)
	ns.addBridge("br0")
	ns.ip("addr", "add", "10.96.0.1/24", "dev", "br0")
	d, err := OpenDevice(DeviceConfig{Name: "rt7", Netns: ns.name, Bridge: "br0"})
	if err != nil {
		t.Fatalf("OpenDevice: %v", err)
	}
	defer d.Close()
	mac := [6]byte{0x02, 0x00, 0x00, 0xaa, 0xbb, 0xcd}
	request := deviceARPFrame(1, mac, netip.MustParseAddr("10.96.0.2"), [6]byte{}, netip.MustParseAddr("10.96.0.1"))
	if err := d.WriteFrame(request); err != nil {
		t.Fatalf("WriteFrame: %v", err)
	}
	type result struct {
		n   int
		err error
		b   []byte
	}
	got := make(chan result, 1)
	go func() {
		b := make([]byte, 20)
		n, err := d.ReadFrame(b)
		got <- result{n, err, b}
	}()
	select {
	case r := <-got:
		// Whatever the kernel sent first (the reply, or IPv6 multicast from
		// the bridge), every frame is longer than 20 bytes.
		if r.err != nil || r.n != 20 {
			t.Fatalf("ReadFrame into 20 bytes = %d, %v; want 20, nil", r.n, r.err)
		}
		if r.b[12] != 0x08 && r.b[12] != 0x86 {
			t.Errorf("truncated frame does not start with an Ethernet header: % x", r.b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no frame within 10s")
	}
}

// TestDeviceConcurrentWrites writes frames from several goroutines and
// checks that the kernel counts every one whole.
func TestDeviceConcurrentWrites(t *testing.T) {
	ns := newTestNetns(t)
	d, err := OpenDevice(DeviceConfig{Name: "rt3", Netns: ns.name})
	if err != nil {
		t.Fatalf("OpenDevice: %v", err)
	}
	defer d.Close()
	const writers, each = 4, 50
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			// A frame to a made-up unicast MAC with an unknown EtherType:
			// the kernel counts it and drops it.
			f := make([]byte, 60+i)
			copy(f, []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0xb5})
			for range each {
				if err := d.WriteFrame(f); err != nil {
					t.Errorf("WriteFrame: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	// The TAP's rx counters are the kernel's receive side: what we wrote.
	var links []struct {
		Stats64 struct {
			Rx struct{ Bytes, Packets int }
		}
	}
	out := ns.ip("-j", "-s", "link", "show", "dev", "rt3")
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -j -s link show rt3: %v:\n%s", err, out)
	}
	var wantBytes int
	for i := range writers {
		wantBytes += each * (60 + i)
	}
	if rx := links[0].Stats64.Rx; rx.Packets != writers*each || rx.Bytes != wantBytes {
		t.Errorf("kernel received %d frames / %d bytes, want %d / %d", rx.Packets, rx.Bytes, writers*each, wantBytes)
	}
}

// TestDeviceOpenErrors checks failures and that none leaves a TAP behind.
func TestDeviceOpenErrors(t *testing.T) {
	ns := newTestNetns(t)
	ns.addBridge("br0")
	ns.ip("tuntap", "add", "tun9", "mode", "tun")

	for _, tc := range []struct {
		name string
		cfg  DeviceConfig
		want string
	}{
		{"name too long", DeviceConfig{Name: "rt-name-too-long", Netns: ns.name}, "longer than 15"},
		{"missing bridge", DeviceConfig{Name: "rt4", Netns: ns.name, Bridge: "nobr"}, "bridge nobr"},
		{"bridge is not a bridge", DeviceConfig{Name: "rt4", Netns: ns.name, Bridge: "lo"}, "not a bridge"},
		{"name of a bridge", DeviceConfig{Name: "br0", Netns: ns.name}, "is a bridge link, not a TAP"},
		{"name of a TUN", DeviceConfig{Name: "tun9", Netns: ns.name}, "TUN device, not a TAP"},
		{"missing namespace", DeviceConfig{Name: "rt4", Netns: ns.name + "-none"}, "open network namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := OpenDevice(tc.cfg)
			if err == nil {
				d.Close()
				t.Fatalf("OpenDevice succeeded, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("OpenDevice: %v, want an error containing %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "tap: ") {
				t.Errorf("error %q does not say it comes from tap", err)
			}
			if ns.linkExists("rt4") {
				t.Error("a failed OpenDevice left rt4 behind")
			}
		})
	}
	// The bridge and the TUN are untouched.
	if out := ns.ip("-d", "-o", "link", "show", "dev", "tun9"); !strings.Contains(out, "tun type tun") {
		t.Errorf("tun9 changed:\n%s", out)
	}

	// A TAP someone else holds open cannot be attached to, and the failed
	// attempt leaves the holder's TAP working.
	held, err := OpenDevice(DeviceConfig{Name: "rt8", Netns: ns.name})
	if err != nil {
		t.Fatalf("OpenDevice rt8: %v", err)
	}
	if d, err := OpenDevice(DeviceConfig{Name: "rt8", Netns: ns.name}); err == nil {
		d.Close()
		t.Error("attached to a TAP another fd holds")
	} else if !strings.Contains(err.Error(), "is another process using it?") {
		t.Errorf("attach to a held TAP: %v, want the EBUSY explanation", err)
	}
	if !ns.linkExists("rt8") {
		t.Fatal("a failed attach removed the holder's TAP")
	}
	if err := held.WriteFrame(make([]byte, 60)); err != nil {
		t.Errorf("the holder's TAP stopped working: %v", err)
	}
	held.Close()

	// A failure after the TAP exists: IPv6 is off for new links in the
	// namespace, so adding an IPv6 address fails once the TAP is created.
	ns.sysctl("net.ipv6.conf.default.disable_ipv6", "1")
	_, err = OpenDevice(DeviceConfig{
		Name: "rt5", Netns: ns.name, MTU: 2000,
		Addrs: []netip.Prefix{netip.MustParsePrefix("10.97.0.1/24"), netip.MustParsePrefix("fd00:97::1/64")},
	})
	if err == nil || !strings.Contains(err.Error(), "add address fd00:97::1/64 to rt5") {
		t.Fatalf("OpenDevice with IPv6 disabled: %v, want an add address error", err)
	}
	if ns.linkExists("rt5") {
		t.Error("a TAP created by a failed OpenDevice survived")
	}

	// The same failure on an attached TAP puts back what was changed.
	ns.ip("tuntap", "add", "rt6", "mode", "tap")
	_, err = OpenDevice(DeviceConfig{
		Name: "rt6", Netns: ns.name, MTU: 2000, Bridge: "br0",
		Addrs: []netip.Prefix{netip.MustParsePrefix("10.97.1.1/24"), netip.MustParsePrefix("fd00:97:1::1/64")},
	})
	if err == nil {
		t.Fatal("OpenDevice on rt6 with IPv6 disabled succeeded")
	}
	out := ns.ip("-d", "-o", "link", "show", "dev", "rt6")
	if !strings.Contains(out, "mtu 1500") || strings.Contains(out, "master") || !strings.Contains(out, "persist on") {
		t.Errorf("a failed attach did not restore rt6:\n%s", out)
	}
	if out := ns.ip("-o", "addr", "show", "dev", "rt6"); strings.Contains(out, "10.97.1.1") {
		t.Errorf("a failed attach left an address on rt6:\n%s", out)
	}
}

// deviceARPFrame builds an Ethernet+ARP frame (RFC 826) for IPv4 over
// Ethernet: a broadcast request (op 1) or a reply to tha (op 2).
func deviceARPFrame(op uint16, sha [6]byte, spa netip.Addr, tha [6]byte, tpa netip.Addr) []byte {
	f := make([]byte, 42)
	if op == 1 {
		copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	} else {
		copy(f[0:6], tha[:])
	}
	copy(f[6:12], sha[:])
	binary.BigEndian.PutUint16(f[12:], 0x0806)
	binary.BigEndian.PutUint16(f[14:], 1)      // htype Ethernet
	binary.BigEndian.PutUint16(f[16:], 0x0800) // ptype IPv4
	f[18], f[19] = 6, 4
	binary.BigEndian.PutUint16(f[20:], op)
	copy(f[22:28], sha[:])
	s, p := spa.As4(), tpa.As4()
	copy(f[28:32], s[:])
	copy(f[32:38], tha[:])
	copy(f[38:42], p[:])
	return f
}

// deviceIsARPReply reports whether f is an ARP reply to (mac, to) saying
// where from is.
func deviceIsARPReply(f []byte, mac [6]byte, from, to netip.Addr) bool {
	if len(f) < 42 || binary.BigEndian.Uint16(f[12:]) != 0x0806 || binary.BigEndian.Uint16(f[20:]) != 2 {
		return false
	}
	s, p := from.As4(), to.As4()
	return bytes.Equal(f[0:6], mac[:]) && bytes.Equal(f[28:32], s[:]) &&
		bytes.Equal(f[32:38], mac[:]) && bytes.Equal(f[38:42], p[:])
}
