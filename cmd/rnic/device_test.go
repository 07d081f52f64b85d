package main

// The tools on a device of another backend, chosen by -d: a fake rnicd
// backend registered for the test serves embedded NICs on loopback
// addresses behind a type of its own (no local NIC, memory from
// AllocBuffer), as the rnicd client will.

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/passthrough"
)

// cmdDeviceRDMAPort is the fake backend's NICs' RoCEv2 port.
const cmdDeviceRDMAPort = 24798

// fakeRnicd counts what the tools ask of its devices.
type fakeRnicd struct{ opens, allocs, closes atomic.Int32 }

// installFakeRnicd registers the fake backend: rnic2 is a NIC on
// 127.0.0.2, rnic3 on 127.0.0.3, with an Ethernet MTU of 1500 (active MTU
// 1024).
func installFakeRnicd(t *testing.T) *fakeRnicd {
	t.Helper()
	f := &fakeRnicd{}
	addrs := map[string]netip.Addr{"rnic2": netip.MustParseAddr("127.0.0.2"), "rnic3": netip.MustParseAddr("127.0.0.3")}
	prev := ibv.Register(ibv.BackendDaemon, func(s ibv.Spec) (ibv.Device, error) {
		a, ok := addrs[s.Name]
		if !ok {
			return nil, fmt.Errorf("fake rnicd: no device %s", s.Name)
		}
		n, err := embedded.Open(embedded.UDPConfig{Name: s.Name, Addr: a, Port: cmdDeviceRDMAPort, MTU: 1500})
		if err != nil {
			return nil, err
		}
		f.opens.Add(1)
		return &fakeRnicdDevice{Device: nic.AsIBV(n.Device, nic.IBVOptions{Close: n.Close}), f: f}, nil
	})
	t.Cleanup(func() { ibv.Register(ibv.BackendDaemon, prev) })
	return f
}

type fakeRnicdDevice struct {
	ibv.Device
	f *fakeRnicd
}

func (d *fakeRnicdDevice) AllocBuffer(n int) (ibv.Buffer, error) {
	d.f.allocs.Add(1)
	sh, err := memory.NewShared(n)
	if err != nil {
		return nil, err
	}
	return sharedBuffer{sh}, nil
}

func (d *fakeRnicdDevice) Close() error {
	d.f.closes.Add(1)
	return d.Device.Close()
}

type sharedBuffer struct{ sh *memory.Shared }

func (b sharedBuffer) Bytes() []byte { return b.sh.Bytes() }
func (b sharedBuffer) Close() error  { return b.sh.Close() }

// TestPingpongOnDevice: rnic pingpong -d NAME@SOCKET on both sides, the
// GIDs the devices' own.
func TestPingpongOnDevice(t *testing.T) {
	f := installFakeRnicd(t)
	port := freePort(t)
	common := []string{"pingpong", "-p", port, "-n", "50", "-s", "100", "-g", "0", "--chk"}
	sOut, sErr, sCode, cOut, cErr, cCode := both(t, append(append([]string{}, common...), "-d", "rnic2@/run/fake.sock"),
		append(append([]string{}, common...), "-d", "rnic3@/run/fake.sock", "127.0.0.2"))
	if sCode != 0 || cCode != 0 {
		t.Fatalf("server %d: %s%s\nclient %d: %s%s", sCode, sOut, sErr, cCode, cOut, cErr)
	}
	addr := `LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID `
	re := regexp.MustCompile(`^  local address:  ` + addr + regexp.QuoteMeta("::ffff:127.0.0.3") + "\n" +
		`  remote address: ` + addr + regexp.QuoteMeta("::ffff:127.0.0.2") + "\n" +
		`10000 bytes in \d+\.\d\d seconds = \d+\.\d\d Mbit/sec` + "\n" +
		`50 iters in \d+\.\d\d seconds = \d+\.\d\d usec/iter` + "\n$")
	if !re.MatchString(cOut) {
		t.Errorf("client output does not match %s:\n%s", re, cOut)
	}
	if f.opens.Load() != 2 || f.closes.Load() != 2 || f.allocs.Load() != 2 {
		t.Errorf("%d opens, %d closes, %d buffers; want 2 each", f.opens.Load(), f.closes.Load(), f.allocs.Load())
	}
}

// TestPerfOnDevice: rnic perf -d NAME@SOCKET runs both sides on the one
// device, at its port's active MTU unless told.
func TestPerfOnDevice(t *testing.T) {
	f := installFakeRnicd(t)
	out, errOut, code := rnic(t, "perf", "send_bw", "-d", "rnic2@/run/fake.sock", "-s", "1000", "-n", "100", "-q", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var res struct {
		MTU   int `json:"mtu"`
		Check struct {
			Bytes, Mismatched int64
		} `json:"check"`
		Raw *struct{ Ratio float64 } `json:"raw_udp"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.MTU != 1024 || res.Check.Bytes != 2*1000 || res.Check.Mismatched != 0 || res.Raw == nil || res.Raw.Ratio <= 0 {
		t.Errorf("result %+v\n%s", res, out)
	}
	if f.opens.Load() != 1 || f.closes.Load() != 1 {
		t.Errorf("device opened %d times, closed %d", f.opens.Load(), f.closes.Load())
	}
}

// TestDemoOnDevice: rnic demo -d puts both sides on one device.
func TestDemoOnDevice(t *testing.T) {
	installFakeRnicd(t)
	out, errOut, code := rnic(t, "demo", "-d", "rnic2@/run/fake.sock")
	if code != 0 || !strings.Contains(out, "demo: 8 steps, 8 behaved as specified") || !strings.Contains(out, "rnic2/B received") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

// TestDeviceFlagErrors: flags for a NIC of this process are usage errors
// with another backend's device, which owns its port; so are -R on a
// device without rdma_cm and an unparsable device string. A verbs: device fails the run
// in the pure-Go build with the rebuild hint.
func TestDeviceFlagErrors(t *testing.T) {
	installFakeRnicd(t)
	dev := "rnic2@/run/fake.sock"
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"pingpong", "-d", dev, "--pcap", t.TempDir() + "/x.pcap"}, 2, "--pcap is for a NIC of this process, not device rnic2@/run/fake.sock, whose port the rnicd backend owns"},
		{[]string{"pingpong", "-d", dev, "--tap", "t0", "--ip", "10.0.0.1/24"}, 2, "--tap is for a NIC of this process"},
		{[]string{"pingpong", "-d", "bad/name"}, 2, "-d: ibv: device string"},
		{[]string{"perf", "-d", dev, "--trace"}, 2, "--trace is for a NIC of this process"},
		{[]string{"perf", "-d", dev, "--rdma-port", "5000"}, 2, "--rdma-port is for a NIC of this process"},
		{[]string{"perf", "-d", dev, "-R"}, 2, "-R needs rdma_cm, which device rnic2@/run/fake.sock does not offer"},
		{[]string{"perf", "-d", dev, "--mtu", "4096"}, 2, "does not fit device rnic2@/run/fake.sock's port (at most 1024)"},
		{[]string{"demo", "-d", dev, "--iwarp"}, 2, "--iwarp: not with -d"},
		{[]string{"demo", "-d", dev, "--addr-a", "127.0.0.9"}, 2, "not in device rnic2's GID table"},
	} {
		_, errOut, code := rnic(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.stderr) {
			t.Errorf("%q: %d %q, want %d %q", c.args, code, errOut, c.code, c.stderr)
		}
	}
	if !passthrough.Built {
		_, errOut, code := rnic(t, "pingpong", "-d", "verbs:rxe0")
		if code != 1 || !strings.Contains(errOut, "rebuild with -tags verbs") {
			t.Errorf("pingpong -d verbs:rxe0: %d %q, want 1 and the rebuild hint", code, errOut)
		}
	}
}
