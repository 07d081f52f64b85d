//go:build verbs

// Port 1's GID table as libibverbs reports it (ibv_query_gid_table), and
// the Ethernet device behind the port, whose MTU is the link MTU.
//
// On iWARP a GID means nothing on the wire (the CM and the MPA stream
// address peers by IP; siw reports a single MAC-derived entry), so there,
// as in rnic's own iWARP NIC, the GID table is the IP addresses of the
// port's Ethernet device: IPv4 ones (as ::ffff:a.b.c.d) first, then IPv6.

package passthrough

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/rnic/rnic/nic/verbs"
)

// gidEntry is one valid GID table entry.
type gidEntry struct {
	index   int
	gid     netip.Addr
	typ     uint32 // IBV_GID_TYPE_IB, _ROCE_V1, _ROCE_V2
	ifindex int
}

// gidTable returns port 1's valid GIDs.
func (d *device) gidTable() ([]gidEntry, error) {
	if d.iwarp {
		return d.addressGIDs(), nil
	}
	return d.verbsGIDs()
}

// addressGIDs is the iWARP GID table: the Ethernet device's addresses.
func (d *device) addressGIDs() []gidEntry {
	ifc, err := net.InterfaceByName(d.netdev())
	if err != nil {
		return nil
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return nil
	}
	var v4, v6 []gidEntry
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		e := gidEntry{gid: verbs.GIDFromAddr(p.Addr()), ifindex: ifc.Index}
		if p.Addr().Is4() {
			v4 = append(v4, e)
		} else {
			v6 = append(v6, e)
		}
	}
	out := append(v4, v6...)
	for i := range out {
		out[i].index = i
	}
	return out
}

// verbsGIDs reads port 1's valid GIDs from libibverbs; a kernel without
// the GID table ioctl answers with ibv_query_gid over the table's length.
func (d *device) verbsGIDs() ([]gidEntry, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	var p C.struct_ibv_port_attr
	if r := C.rn_query_port(d.ctx, 1, &p); r != 0 {
		return nil, fmt.Errorf("passthrough: query port 1: %w", errnoErr(r))
	}
	n := int(p.gid_tbl_len)
	if n <= 0 {
		return nil, nil
	}
	entries := make([]C.struct_ibv_gid_entry, n)
	if got := C.rn_query_gid_table(d.ctx, &entries[0], C.size_t(n)); got >= 0 {
		out := make([]gidEntry, 0, int(got))
		for _, e := range entries[:got] {
			out = append(out, gidEntry{
				index:   int(e.gid_index),
				gid:     netip.AddrFrom16(*(*[16]byte)(unsafe.Pointer(&e.gid))),
				typ:     uint32(e.gid_type),
				ifindex: int(e.ndev_ifindex),
			})
		}
		return out, nil
	}
	var out []gidEntry
	for i := 0; i < min(n, 256); i++ {
		var g C.union_ibv_gid
		if C.ibv_query_gid(d.ctx, 1, C.int(i), &g) != 0 {
			continue
		}
		a := netip.AddrFrom16(*(*[16]byte)(unsafe.Pointer(&g)))
		if !a.IsUnspecified() {
			out = append(out, gidEntry{index: i, gid: a, typ: C.IBV_GID_TYPE_ROCE_V2})
		}
	}
	return out, nil
}

// GIDs returns port 1's GID table, indexed like the device's: an unused
// entry below the last valid one reads as ::.
func (d *device) GIDs() []netip.Addr {
	entries, err := d.gidTable()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, e := range entries {
		for len(out) <= e.index {
			out = append(out, netip.IPv6Unspecified())
		}
		out[e.index] = e.gid
	}
	return out
}

func (d *device) QueryGID(port uint8, index int) (netip.Addr, error) {
	if d.iwarp {
		for _, e := range d.addressGIDs() {
			if e.index == index && port == 1 {
				return e.gid, nil
			}
		}
		return netip.Addr{}, fmt.Errorf("passthrough: query GID %d of port %d: %w", index, port, verbs.ErrInvalid)
	}
	if err := d.enter(); err != nil {
		return netip.Addr{}, err
	}
	defer d.leave()
	var g C.union_ibv_gid
	if r := C.ibv_query_gid(d.ctx, C.uint8_t(port), C.int(index), &g); r != 0 {
		return netip.Addr{}, fmt.Errorf("passthrough: query GID %d of port %d: %w", index, port, verbs.ErrInvalid)
	}
	return netip.AddrFrom16(*(*[16]byte)(unsafe.Pointer(&g))), nil
}

// GIDIndex returns the index of addr's GID; where a RoCE device lists the
// address twice (RoCE v1 and v2), the v2 entry, which is what rnic speaks.
func (d *device) GIDIndex(addr netip.Addr) (int, error) {
	g := verbs.GIDFromAddr(addr)
	entries, err := d.gidTable()
	if err != nil {
		return 0, err
	}
	best := -1
	for _, e := range entries {
		if e.gid != g {
			continue
		}
		if best < 0 || e.typ == C.IBV_GID_TYPE_ROCE_V2 {
			best = e.index
		}
		if e.typ == C.IBV_GID_TYPE_ROCE_V2 {
			break
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("passthrough: %v is not in %s's GID table: %w", addr, d.name, verbs.ErrInvalid)
	}
	return best, nil
}

// netdev returns the name of the Ethernet device behind port 1: the one a
// GID entry names (RoCE), else the parent rxe records in sysfs, else the
// PCI function's net device (hardware), else the interface whose EUI-64
// is the node GUID (siw derives its GUID from the MAC so).
func (d *device) netdev() string {
	if entries, err := d.verbsGIDs(); err == nil && !d.iwarp {
		for _, e := range entries {
			if e.ifindex > 0 {
				if ifc, err := net.InterfaceByIndex(e.ifindex); err == nil {
					return ifc.Name
				}
			}
		}
	}
	sys := filepath.Join("/sys/class/infiniband", d.name)
	if b, err := os.ReadFile(filepath.Join(sys, "parent")); err == nil {
		return strings.TrimSpace(string(b))
	}
	if ents, err := os.ReadDir(filepath.Join(sys, "device", "net")); err == nil && len(ents) > 0 {
		return ents[0].Name()
	}
	if ifcs, err := net.Interfaces(); err == nil && d.attr.NodeGUID != 0 {
		for _, ifc := range ifcs {
			if len(ifc.HardwareAddr) == 6 && eui64([6]byte(ifc.HardwareAddr)) == d.attr.NodeGUID {
				return ifc.Name
			}
		}
	}
	return ""
}

// eui64 is a MAC's modified EUI-64 (RFC 4291 Appendix A).
func eui64(mac [6]byte) uint64 {
	return uint64(mac[0]^0x02)<<56 | uint64(mac[1])<<48 | uint64(mac[2])<<40 |
		0xff<<32 | 0xfe<<24 | uint64(mac[3])<<16 | uint64(mac[4])<<8 | uint64(mac[5])
}

// linkMTU is the MTU of the port's Ethernet device, or 0 if unknown.
func (d *device) linkMTU() int {
	if name := d.netdev(); name != "" {
		if ifc, err := net.InterfaceByName(name); err == nil {
			return ifc.MTU
		}
	}
	return 0
}
