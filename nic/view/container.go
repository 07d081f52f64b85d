// The view in a container: run by an OCI createContainer hook in the
// container's mount and network namespaces, before the runtime pivots to
// the container's root, it shows the NICs in the container's /sys/class
// as rnic exec's view does (the device nodes and the daemon's socket are
// the runtime's to give, from the CDI spec).

package view

import (
	"path/filepath"
)

// ShowInContainer adds devs to the /sys/class of the container whose root
// file system is mounted at rootfs. A NIC's interface is the one of this
// network namespace that carries its address, if one does.
func ShowInContainer(rootfs string, devs []Device) error {
	host := hostAddrs()
	netdev := map[string]string{}
	for _, d := range devs {
		for _, a := range d.Addrs() {
			if h, ok := host[a]; ok && h.usable {
				netdev[d.Name] = h.ifname
				break
			}
		}
	}
	return shadow(filepath.Join(rootfs, "sys", "class"), SysClass(devs, netdev, cpusAllowed()))
}
