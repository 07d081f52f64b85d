package demo

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
)

// deviceTestPort is the RoCEv2 port of this file's NICs.
const deviceTestPort = 24797

// remoteDevice stands for a device of another backend (rnicd's): the
// embedded NIC behind a type of its own, memory from AllocBuffer.
type remoteDevice struct {
	ibv.Device
	allocs, closes atomic.Int32
}

func (d *remoteDevice) AllocBuffer(n int) (ibv.Buffer, error) {
	d.allocs.Add(1)
	sh, err := memory.NewShared(n)
	if err != nil {
		return nil, err
	}
	return sharedBuffer{sh}, nil
}

func (d *remoteDevice) Close() error {
	d.closes.Add(1)
	return d.Device.Close()
}

type sharedBuffer struct{ sh *memory.Shared }

func (b sharedBuffer) Bytes() []byte { return b.sh.Bytes() }
func (b sharedBuffer) Close() error  { return b.sh.Close() }

func openLoopbackNIC(t *testing.T, name string) ibv.Device {
	t.Helper()
	n, err := embedded.Open(embedded.UDPConfig{Name: name, Addr: netip.MustParseAddr("127.0.0.2"), Port: deviceTestPort, MTU: 1500})
	if err != nil {
		t.Fatal(err)
	}
	return nic.AsIBV(n.Device, nic.IBVOptions{Close: n.Close})
}

// TestDemoOnOneDevice: every step passes with both sides on one device,
// a local NIC or another backend's, their QPs talking through its port;
// the sides are named after the device, no wire lines are made up, the
// other backend's memory comes from it, and the device is closed once.
func TestDemoOnOneDevice(t *testing.T) {
	for _, remote := range []bool{false, true} {
		name := map[bool]string{false: "local", true: "another backend's"}[remote]
		t.Run(name, func(t *testing.T) {
			dev := openLoopbackNIC(t, "rnic7")
			rd := &remoteDevice{Device: dev}
			if remote {
				dev = rd
			}
			var out bytes.Buffer
			if err := Run(context.Background(), Config{Device: dev, Out: &out}); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			s := out.String()
			for _, want := range []string{"demo: 8 steps, 8 behaved as specified", "both sides on device rnic7",
				"completion at rnic7/B: wr_id=100 RECV", "rnic7/B received:", "QP states now: rnic7/A ERR, rnic7/B ERR",
				"REM_ACCESS_ERR"} {
				if !strings.Contains(s, want) {
					t.Errorf("narration lacks %q", want)
				}
			}
			if strings.Contains(s, "  wire: ") || strings.Contains(s, "rnic1") {
				t.Errorf("wire lines or rnic1 in the narration:\n%s", s)
			}
			if remote && (rd.allocs.Load() != 2 || rd.closes.Load() != 1) {
				t.Errorf("%d buffers from the device, %d closes; want 2 and 1", rd.allocs.Load(), rd.closes.Load())
			}
			if testing.Verbose() {
				t.Log(s)
			}
		})
	}
}

// TestDemoDeviceAddr: an address the device has no GID of is refused.
func TestDemoDeviceAddr(t *testing.T) {
	dev := &remoteDevice{Device: openLoopbackNIC(t, "rnic7")}
	err := Run(context.Background(), Config{Device: dev, AddrA: netip.MustParseAddr("127.0.0.9")})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "not in device rnic7's GID table") || dev.closes.Load() != 1 {
		t.Errorf("%v (%d closes)", err, dev.closes.Load())
	}
}
