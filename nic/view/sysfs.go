// The /sys/class entries of the view: infiniband/<dev>/ and
// infiniband_verbs/, with each file's content as the kernel's sysfs
// prints it (drivers/infiniband/core/sysfs.c, uverbs_main.c).

package view

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
)

// uverbsABI is what /sys/class/infiniband_verbs/abi_version holds: the
// kernel's IB_USER_VERBS_ABI_VERSION.
const uverbsABI = 6

// driverABI is uverbsN/abi_version, a driver's uverbs ABI: rxe's
// (RXE_UVERBS_ABI_VERSION), the driver the drop-in stands in for.
const driverABI = 2

// SysClass returns the view's additions to /sys/class: infiniband and
// infiniband_verbs. netdev names the interface carrying each device's
// addresses (by device name); cpus is the mask of device/local_cpus.
func SysClass(devs []Device, netdev map[string]string, cpus string) *Node {
	root := dir()
	ib, uv := root.mkdirs("infiniband"), root.mkdirs("infiniband_verbs")
	uv.put("abi_version", file(fmt.Sprintf("%d\n", uverbsABI)))
	for i := range devs {
		d := &devs[i]
		ib.Dir[d.Name] = ibDevice(d, netdev[d.Name], cpus)
		u := dir()
		u.put("ibdev", file(d.Name+"\n"))
		u.put("abi_version", file(fmt.Sprintf("%d\n", driverABI)))
		uv.Dir[fmt.Sprintf("uverbs%d", d.Index)] = u
	}
	return root
}

// ibDevice is /sys/class/infiniband/<dev>/.
func ibDevice(d *Device, ifname, cpus string) *Node {
	n := dir()
	n.put("node_type", file(nodeType(d.Transport.NodeType())))
	n.put("node_guid", file(guid(d.NodeGUID)))
	n.put("sys_image_guid", file(guid(d.SysImageGUID)))
	n.put("fw_ver", file(d.FwVer+"\n"))
	n.put("hca_type", file("rnic\n"))
	n.put("node_desc", file("rnic "+d.Name+"\n"))
	dev := n.mkdirs("device")
	dev.put("numa_node", file("-1\n"))
	if cpus != "" {
		dev.put("local_cpus", file(cpus+"\n"))
	}
	net := dev.mkdirs("net")
	if ifname != "" {
		net.put(ifname, symlink("/sys/class/net/"+ifname))
	}
	n.put("ports/1", port(d, ifname))
	return n
}

// port is ports/1/.
func port(d *Device, ifname string) *Node {
	p := dir()
	p.put("state", file(fmt.Sprintf("%d: %s\n", d.State, portState(d.State))))
	p.put("phys_state", file(fmt.Sprintf("%d: %s\n", d.PhysState, physState(d.PhysState))))
	p.put("link_layer", file(linkLayer(d.LinkLayer)))
	// The drop-in reports 1X SDR (active_width 1, active_speed 1); the
	// kernel prints rate/10 with ".5" for the half.
	p.put("rate", file("2.5 Gb/sec (1X SDR)\n"))
	p.put("lid", file("0x0\n"))
	p.put("sm_lid", file("0x0\n"))
	p.put("sm_sl", file("0\n"))
	p.put("lid_mask_count", file("0\n"))
	p.put("cap_mask", file(fmt.Sprintf("0x%08x\n", capMask)))
	gids, types, ndevs := p.mkdirs("gids"), p.mkdirs("gid_attrs/types"), p.mkdirs("gid_attrs/ndevs")
	for i := range max(d.GIDTblLen, len(d.GIDs)) {
		g := netip.IPv6Unspecified()
		if i < len(d.GIDs) {
			g = d.GIDs[i]
		}
		gids.put(fmt.Sprint(i), file(gidString(g)+"\n"))
		// The kernel's read of an unused entry's attributes fails; here
		// the file is absent (UCX and libibverbs take a failed read
		// alike). iWARP ports have no RoCE GID types.
		if i < len(d.GIDs) && d.Transport == verbs.TransportIB {
			types.put(fmt.Sprint(i), file("RoCE v2\n"))
			if ifname != "" {
				ndevs.put(fmt.Sprint(i), file(ifname+"\n"))
			}
		}
	}
	pk := p.mkdirs("pkeys")
	for i := range max(d.PKeyTblLen, 1) {
		v := 0
		if i == 0 {
			v = nic.DefaultPKey
		}
		pk.put(fmt.Sprint(i), file(fmt.Sprintf("0x%04x\n", v)))
	}
	return p
}

// capMask is the port's capability mask as the drop-in reports it:
// IB_PORT_CM_SUP | IB_PORT_IP_BASED_GIDS.
const capMask = 1<<16 | 1<<26

// guid prints a GUID as the kernel does: four big-endian 16-bit groups.
func guid(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x\n", g>>48, g>>32&0xffff, g>>16&0xffff, g&0xffff)
}

// gidString prints a GID as %pI6: eight groups of four hex digits.
func gidString(g netip.Addr) string {
	b := g.As16()
	var s strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			s.WriteByte(':')
		}
		fmt.Fprintf(&s, "%02x%02x", b[i], b[i+1])
	}
	return s.String()
}

func nodeType(t verbs.NodeType) string {
	if t == verbs.NodeRNIC {
		return "4: RNIC\n"
	}
	return "1: CA\n"
}

// portState names a state as the kernel's state_show does.
func portState(s verbs.PortState) string {
	switch s {
	case verbs.PortDown:
		return "DOWN"
	case verbs.PortInit:
		return "INIT"
	case verbs.PortArmed:
		return "ARMED"
	case verbs.PortActive:
		return "ACTIVE"
	case 5:
		return "ACTIVE_DEFER"
	}
	return "NOP"
}

// physState names a physical state as phys_state_show does.
func physState(s uint8) string {
	names := map[uint8]string{1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining",
		5: "LinkUp", 6: "LinkErrorRecovery", 7: "Phy Test"}
	if n, ok := names[s]; ok {
		return n
	}
	return "<unknown>"
}

func linkLayer(l verbs.LinkLayer) string {
	if l == verbs.LinkLayerInfiniBand {
		return "InfiniBand\n"
	}
	return "Ethernet\n"
}
