package view

import (
	"net/netip"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

func roceDevice() Device {
	return Device{Index: 1, Name: "rnic1", NodeGUID: 0x02007fff_fe000003, SysImageGUID: 0x02007fff_fe000003,
		FwVer: "rnic 0.1", Transport: verbs.TransportIB, State: verbs.PortActive, PhysState: verbs.PhysStateLinkUp,
		LinkLayer: verbs.LinkLayerEthernet, GIDs: []netip.Addr{netip.MustParseAddr("::ffff:127.0.0.3")}, GIDTblLen: 2, PKeyTblLen: 1}
}

// TestSysClassFormats: each file as the kernel's sysfs prints it.
func TestSysClassFormats(t *testing.T) {
	root := SysClass([]Device{roceDevice()}, map[string]string{"rnic1": "rnic1"}, "3")
	for path, want := range map[string]string{
		"infiniband/rnic1/node_guid":                 "0200:7fff:fe00:0003\n",
		"infiniband/rnic1/sys_image_guid":            "0200:7fff:fe00:0003\n",
		"infiniband/rnic1/node_type":                 "1: CA\n",
		"infiniband/rnic1/fw_ver":                    "rnic 0.1\n",
		"infiniband/rnic1/device/local_cpus":         "3\n",
		"infiniband/rnic1/ports/1/state":             "4: ACTIVE\n",
		"infiniband/rnic1/ports/1/phys_state":        "5: LinkUp\n",
		"infiniband/rnic1/ports/1/link_layer":        "Ethernet\n",
		"infiniband/rnic1/ports/1/lid":               "0x0\n",
		"infiniband/rnic1/ports/1/cap_mask":          "0x04010000\n",
		"infiniband/rnic1/ports/1/gids/0":            "0000:0000:0000:0000:0000:ffff:7f00:0003\n",
		"infiniband/rnic1/ports/1/gids/1":            "0000:0000:0000:0000:0000:0000:0000:0000\n",
		"infiniband/rnic1/ports/1/gid_attrs/types/0": "RoCE v2\n",
		"infiniband/rnic1/ports/1/gid_attrs/ndevs/0": "rnic1\n",
		"infiniband/rnic1/ports/1/pkeys/0":           "0xffff\n",
		"infiniband_verbs/abi_version":               "6\n",
		"infiniband_verbs/uverbs1/ibdev":             "rnic1\n",
	} {
		n := root.Get(path)
		if n == nil || n.Data != want {
			t.Errorf("%s = %+v, want %q", path, n, want)
		}
	}
	if n := root.Get("infiniband/rnic1/device/net/rnic1"); n == nil || n.Link != "/sys/class/net/rnic1" {
		t.Errorf("device/net/rnic1 = %+v, want a link to /sys/class/net/rnic1", n)
	}
	// An unused GID slot has no attributes: the kernel's read fails.
	if n := root.Get("infiniband/rnic1/ports/1/gid_attrs/types/1"); n != nil {
		t.Errorf("types/1 of an unused slot: %+v", n)
	}
}

// TestSysClassIWARP: an iWARP NIC is an RNIC with no RoCE GID types.
func TestSysClassIWARP(t *testing.T) {
	d := roceDevice()
	d.Transport = verbs.TransportIWARP
	root := SysClass([]Device{d}, nil, "")
	if n := root.Get("infiniband/rnic1/node_type"); n == nil || n.Data != "4: RNIC\n" {
		t.Errorf("node_type %+v, want 4: RNIC", n)
	}
	if n := root.Get("infiniband/rnic1/ports/1/gid_attrs/types/0"); n != nil {
		t.Errorf("an iWARP GID has a type: %+v", n)
	}
	if n := root.Get("infiniband/rnic1/ports/1/link_layer"); n == nil || n.Data != "Ethernet\n" {
		t.Errorf("link_layer %+v, want Ethernet", n)
	}
}

// TestDevInfiniband: uverbsN by the device's index, and rdma_cm.
func TestDevInfiniband(t *testing.T) {
	n := DevInfiniband([]Device{{Index: 0, Name: "a"}, {Index: 1, Name: "b"}}, "/dev/null")
	for _, name := range []string{"uverbs0", "uverbs1", "rdma_cm"} {
		if c := n.Dir[name]; c == nil || c.Bind != "/dev/null" {
			t.Errorf("%s = %+v, want a bind of /dev/null", name, c)
		}
	}
	if len(n.Dir) != 3 {
		t.Errorf("%d entries, want 3", len(n.Dir))
	}
}
