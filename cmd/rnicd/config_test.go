// Tests of the command line → configuration step.

package main

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/tapnic"
)

func TestParseArgsSingleDevice(t *testing.T) {
	specs, err := devices([]string{"--tap", "t0", "--ip", "10.77.0.50/24", "--ip6", "fd00:77::50/64",
		"--mac", "02:00:0a:4d:00:32", "--mtu", "9000", "--pcap", "t0.pcap", "--netns", "lab", "--bridge", "br0"})
	if err != nil {
		t.Fatalf("parseArgs: %v", err)
	}
	want := []deviceSpec{{Config: tapnic.Config{
		Name: "rnic0", TAP: "t0", Netns: "lab", Bridge: "br0",
		Prefixes: []netip.Prefix{netip.MustParsePrefix("10.77.0.50/24"), netip.MustParsePrefix("fd00:77::50/64")},
		MAC:      [6]byte{0x02, 0x00, 0x0a, 0x4d, 0x00, 0x32},
		MTU:      9000,
	}, PcapPath: "t0.pcap"}}
	if !reflect.DeepEqual(specs, want) {
		t.Errorf("parseArgs:\n got %+v\nwant %+v", specs, want)
	}

	// The minimum: a TAP and one address; everything else defaults.
	specs, err = devices([]string{"--tap=t0", "--ip6=fd00::2/64", "--name=mlx"})
	if err != nil {
		t.Fatalf("parseArgs: %v", err)
	}
	want = []deviceSpec{{Config: tapnic.Config{Name: "mlx", TAP: "t0",
		Prefixes: []netip.Prefix{netip.MustParsePrefix("fd00::2/64")}}}}
	if !reflect.DeepEqual(specs, want) {
		t.Errorf("parseArgs:\n got %+v\nwant %+v", specs, want)
	}
}

func TestParseArgsSeveralDevices(t *testing.T) {
	specs, err := devices([]string{
		"--tap", "t0", "--ip", "10.0.0.2/24",
		"--device", "name=rnic7,tap=t1,ip=10.0.0.3/24,ip6=fd00::3/64,mac=02:00:00:00:00:03,mtu=9000,pcap=f.pcap,netns=NS,bridge=br0",
		"--device", "tap=t2,ip6=fd00::4/64",
	})
	if err != nil {
		t.Fatalf("parseArgs: %v", err)
	}
	want := []deviceSpec{
		{Config: tapnic.Config{Name: "rnic0", TAP: "t0", Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.2/24")}}},
		{Config: tapnic.Config{Name: "rnic7", TAP: "t1", Netns: "NS", Bridge: "br0",
			Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.3/24"), netip.MustParsePrefix("fd00::3/64")},
			MAC:      [6]byte{2, 0, 0, 0, 0, 3}, MTU: 9000}, PcapPath: "f.pcap"},
		// Default names count devices in order.
		{Config: tapnic.Config{Name: "rnic2", TAP: "t2", Prefixes: []netip.Prefix{netip.MustParsePrefix("fd00::4/64")}}},
	}
	if !reflect.DeepEqual(specs, want) {
		t.Errorf("parseArgs:\n got %+v\nwant %+v", specs, want)
	}

	// --device alone: the first gets rnic0.
	specs, err = devices([]string{"--device", "tap=t1,ip=10.0.0.3/24"})
	if err != nil || len(specs) != 1 || specs[0].Name != "rnic0" {
		t.Errorf("parseArgs(--device only) = %+v, %v; want one spec named rnic0", specs, err)
	}

	// The same TAP name in two namespaces is two TAPs.
	if _, err := devices([]string{"--tap", "t0", "--ip", "10.0.0.2/24", "--netns", "a",
		"--device", "tap=t0,ip=10.0.0.3/24,netns=b"}); err != nil {
		t.Errorf("one TAP name in two namespaces: %v", err)
	}
}

func TestParseArgsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing", nil, "no device"},
		{"bad CIDR", []string{"--tap", "t0", "--ip", "10.0.0.300/24"}, "--ip: \"10.0.0.300/24\" is not an address/prefix-length"},
		{"no prefix length", []string{"--tap", "t0", "--ip", "10.0.0.3"}, "not an address/prefix-length"},
		{"IPv6 in --ip", []string{"--tap", "t0", "--ip", "fd00::3/64"}, "not an IPv4 address"},
		{"IPv4 in --ip6", []string{"--tap", "t0", "--ip6", "10.0.0.3/24"}, "not an IPv6 address"},
		{"mapped in --ip6", []string{"--tap", "t0", "--ip6", "::ffff:10.0.0.3/120"}, "IPv4-mapped"},
		{"multicast", []string{"--tap", "t0", "--ip", "224.0.0.1/4"}, "cannot be a NIC's address"},
		{"IPv4 /32", []string{"--tap", "t0", "--ip", "10.0.0.3/32"}, "give the on-link prefix"},
		{"unspecified", []string{"--tap", "t0", "--ip6", "::/64"}, "cannot be a NIC's address"},
		{"bad MAC", []string{"--tap", "t0", "--ip", "10.0.0.3/24", "--mac", "02:00:00:00:00"}, "--mac"},
		{"multicast MAC", []string{"--tap", "t0", "--ip", "10.0.0.3/24", "--mac", "01:00:5e:00:00:01"}, "not a unicast"},
		{"zero MAC", []string{"--tap", "t0", "--ip", "10.0.0.3/24", "--mac", "00:00:00:00:00:00"}, "not a unicast"},
		{"EUI-64 MAC", []string{"--tap", "t0", "--ip", "10.0.0.3/24", "--mac", "02:00:00:00:00:00:00:01"}, "not a 6-byte"},
		{"missing ip", []string{"--tap", "t0"}, "rnic0 needs --ip and/or --ip6"},
		{"missing tap", []string{"--ip", "10.0.0.3/24"}, "--tap, --udp or --tcp is required"},
		{"mtu low", []string{"--tap", "t0", "--ip", "10.0.0.3/24", "--mtu", "500"}, "not an MTU in 576..9000"},
		{"mtu high", []string{"--tap", "t0", "--ip", "10.0.0.3/24", "--mtu", "9001"}, "not an MTU"},
		{"mtu word", []string{"--tap", "t0", "--ip", "10.0.0.3/24", "--mtu", "jumbo"}, "not an MTU"},
		{"long tap", []string{"--tap", "tap-name-too-long", "--ip", "10.0.0.3/24"}, "longer than 15"},
		{"bad bridge", []string{"--tap", "t0", "--ip", "10.0.0.3/24", "--bridge", "b/r"}, "--bridge"},
		{"duplicate TAP", []string{"--tap", "t0", "--ip", "10.0.0.2/24", "--device", "tap=t0,ip=10.0.0.3/24"}, "two NICs on TAP t0"},
		{"duplicate name", []string{"--tap", "t0", "--ip", "10.0.0.2/24", "--device", "name=rnic0,tap=t1,ip=10.0.0.3/24"}, "two NICs are named rnic0"},
		{"duplicate pcap", []string{"--tap", "t0", "--ip", "10.0.0.2/24", "--pcap", "a.pcap", "--device", "tap=t1,ip=10.0.0.3/24,pcap=a.pcap"}, "two NICs write pcap a.pcap"},
		{"device without tap", []string{"--device", "ip=10.0.0.3/24"}, "tap=, udp= or tcp= is required"},
		{"udp and tap", []string{"--udp", "127.0.0.2", "--tap", "t0"}, "on a TAP or on UDP"},
		{"udp with ip", []string{"--udp", "127.0.0.2", "--ip", "10.0.0.3/24"}, "--ip is for TAP-mode NICs"},
		{"udp bad address", []string{"--udp", "localhost"}, "not ADDR or ADDR:PORT"},
		{"udp unspecified", []string{"--udp", "0.0.0.0"}, "cannot be a NIC's address"},
		{"udp device with mac", []string{"--device", "udp=127.0.0.2,mac=02:00:00:00:00:01"}, "mac= is for TAP-mode"},
		{"duplicate UDP", []string{"--udp", "127.0.0.2", "--device", "udp=127.0.0.2"}, "two NICs on UDP 127.0.0.2:0"},
		{"zero limit", []string{"--udp", "127.0.0.2", "--max-qps", "0"}, "--max-qps must be positive"},
		{"zero client cap", []string{"--udp", "127.0.0.2", "--max-clients", "0"}, "--max-clients must be positive"},
		{"negative per-uid cap", []string{"--udp", "127.0.0.2", "--max-clients-per-uid", "-1"}, "--max-clients-per-uid must be positive"},
		{"device without ip", []string{"--device", "tap=t1"}, "needs ip= and/or ip6="},
		{"device bad CIDR", []string{"--device", "tap=t1,ip=10.0.0.3/33"}, "ip=: \"10.0.0.3/33\""},
		{"device bad MAC", []string{"--device", "tap=t1,ip=10.0.0.3/24,mac=zz"}, "mac="},
		{"device unknown key", []string{"--device", "tap=t1,ip=10.0.0.3/24,speed=100G"}, "unknown key \"speed\""},
		{"device repeated key", []string{"--device", "tap=t1,ip=10.0.0.3/24,ip=10.0.0.4/24"}, "ip given twice"},
		{"device not key=value", []string{"--device", "tap=t1,10.0.0.3/24"}, "not key=value"},
		{"device empty value", []string{"--device", "tap=t1,ip="}, "empty ip"},
		{"unknown flag", []string{"--tap", "t0", "--ip", "10.0.0.3/24", "--speed", "100G"}, "unknown flag: --speed"},
		{"stray argument", []string{"--tap", "t0", "--ip", "10.0.0.3/24", "t1"}, "unexpected argument \"t1\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs, err := devices(tc.args)
			if err == nil {
				t.Fatalf("parseArgs(%q) = %+v, want an error containing %q", tc.args, specs, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseArgs(%q): %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// devices parses args and returns the device specs.
func devices(args []string) ([]deviceSpec, error) {
	o, err := parseArgs(args)
	if err != nil {
		return nil, err
	}
	return o.devices, nil
}

func TestParseArgsUDPAndDaemon(t *testing.T) {
	o, err := parseArgs([]string{"--udp", "127.0.0.2", "--mtu", "9000", "--device", "name=x,udp=127.0.0.3:5000,pcap=x.pcap",
		"--socket", "/tmp/s.sock", "--max-qps", "7", "--max-mr-bytes", "4096", "--max-clients", "9", "--max-clients-per-uid", "3"})
	if err != nil {
		t.Fatal(err)
	}
	want := []deviceSpec{
		{Config: tapnic.Config{Name: "rnic0", MTU: 9000}, UDP: netip.MustParseAddrPort("127.0.0.2:0")},
		{Config: tapnic.Config{Name: "x"}, UDP: netip.MustParseAddrPort("127.0.0.3:5000"), PcapPath: "x.pcap"},
	}
	if !reflect.DeepEqual(o.devices, want) {
		t.Errorf("devices\n got %+v\nwant %+v", o.devices, want)
	}
	if o.socket != "/tmp/s.sock" || o.limits.MaxQPs != 7 || o.limits.MaxMRBytes != 4096 || o.limits.MaxMRs != server.DefaultLimits().MaxMRs ||
		o.limits.MaxClients != 9 || o.limits.MaxClientsPerUID != 3 {
		t.Errorf("options %+v", o)
	}
	// The default socket.
	if o, err := parseArgs([]string{"--udp", "::1"}); err != nil || o.socket != ibv.DefaultSocketPath() {
		t.Errorf("default socket: %+v, %v", o, err)
	}
}

func TestParseArgsHelp(t *testing.T) {
	if _, err := parseArgs([]string{"--help"}); !errors.Is(err, errHelp) {
		t.Errorf("parseArgs(--help) = %v, want errHelp", err)
	}
}
