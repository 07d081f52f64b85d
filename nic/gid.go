// The port's GID table. On RoCEv2 a GID is an IP address: an IPv6 address
// as is, an IPv4 address as its IPv4-mapped form ::ffff:a.b.c.d (IBTA Annex
// A17, RoCEv2). The table is fixed when the device opens, so an index means
// the same address for the device's lifetime.
//
// Linux gives every RoCE port on Ethernet the link-local GID fe80::/64 with
// the MAC's EUI-64 at index 0, then one GID per address of the netdev, so
// scripts for rxe say -g 1 (ibv_rc_pingpong) or -x 1 (perftest) for the
// IPv4 address. A device that owns an Ethernet port (the TAP mode) does the
// same (LinkLocalUsable); one that has no MAC of its own on the wire (the
// embedded mode) keeps index 0 as a placeholder that address vectors may
// not name (LinkLocalPlaceholder), so that index 1 still means the first
// address. Every entry is a RoCEv2 GID: rxe lists each address twice, as a
// RoCE v1 and a RoCE v2 GID; rnic speaks RoCEv2 only and lists it once.

package nic

import (
	"encoding/binary"
	"net/netip"

	"github.com/rnic/rnic/nic/verbs"
)

// maxGIDs is the largest GID table: an address vector's sgid_index is one
// byte.
const maxGIDs = 256

// LinkLocalGID is the link-local GID of a RoCE port: fe80::/64 with the
// EUI-64 interface identifier of the MAC (RFC 4291 Appendix A), which
// Linux puts at index 0 of every RoCE GID table; also the default GID of a
// port without any address.
func LinkLocalGID(mac [6]byte) netip.Addr {
	var b [16]byte
	b[0], b[1] = 0xfe, 0x80
	binary.BigEndian.PutUint64(b[8:], eui64(mac))
	return netip.AddrFrom16(b)
}

// eui64 is the modified EUI-64 of a MAC: the universal/local bit flipped and
// ff:fe inserted in the middle. It is also the node GUID, as RoCE devices
// derive it (Linux addrconf_addr_eui48).
func eui64(mac [6]byte) uint64 {
	return uint64(mac[0]^0x02)<<56 | uint64(mac[1])<<48 | uint64(mac[2])<<40 |
		0xff<<32 | 0xfe<<24 | uint64(mac[3])<<16 | uint64(mac[4])<<8 | uint64(mac[5])
}

// buildGIDTable converts the configured addresses to GIDs in order, or
// returns the link-local default when there are none. Invalid, unspecified,
// multicast and duplicate addresses are refused: none of them can be a
// source address.
func buildGIDTable(addrs []netip.Addr, mac [6]byte) ([]netip.Addr, error) {
	if len(addrs) == 0 {
		return []netip.Addr{LinkLocalGID(mac)}, nil
	}
	if len(addrs) > maxGIDs {
		return nil, errorf(verbs.ErrInvalid, "%d GIDs, at most %d", len(addrs), maxGIDs)
	}
	gids := make([]netip.Addr, 0, len(addrs))
	seen := make(map[netip.Addr]bool, len(addrs))
	for i, a := range addrs {
		g := verbs.GIDFromAddr(a)
		if !g.IsValid() || g.IsUnspecified() || g.Unmap().IsUnspecified() || g.IsMulticast() || g.Unmap().IsMulticast() {
			return nil, errorf(verbs.ErrInvalid, "GID %d: %v cannot be a source address", i, a)
		}
		if seen[g] {
			return nil, errorf(verbs.ErrInvalid, "GID %d: %v listed twice", i, a)
		}
		seen[g] = true
		gids = append(gids, g)
	}
	return gids, nil
}

// WithLinkLocal returns addrs with the link-local GID of mac first (if
// addrs hold it already, it moves first): the GID table order of a port
// with Config.LinkLocal.
func WithLinkLocal(addrs []netip.Addr, mac [6]byte) []netip.Addr {
	ll := LinkLocalGID(mac)
	out := []netip.Addr{ll}
	for _, a := range addrs {
		if verbs.GIDFromAddr(a) != ll {
			out = append(out, a)
		}
	}
	return out
}

// QueryGID returns the GID at index of port (ibv_query_gid).
func (d *Device) QueryGID(port uint8, index int) (netip.Addr, error) {
	if err := checkPort(port); err != nil {
		return netip.Addr{}, err
	}
	if index < 0 || index >= len(d.gids) {
		return netip.Addr{}, errorf(verbs.ErrInvalid, "GID index %d, table has %d (%s)", index, len(d.gids), d.gidLayout())
	}
	return d.gids[index], nil
}

// gidLayout says what the table holds, for errors.
func (d *Device) gidLayout() string {
	if d.linkLocal {
		return "0 is the link-local GID, then the addresses, as on Linux"
	}
	return "the addresses from index 0: this port has no link-local GID"
}

// GIDs returns a copy of port 1's GID table.
func (d *Device) GIDs() []netip.Addr { return append([]netip.Addr(nil), d.gids...) }

// GIDIndex returns the index of addr's GID in port 1's table (an IPv4
// address as ::ffff:a.b.c.d), or an error naming the table when addr is
// not one of the device's addresses.
func (d *Device) GIDIndex(addr netip.Addr) (int, error) {
	g := netip.AddrFrom16(addr.As16())
	for i, a := range d.gids {
		if a == g {
			return i, nil
		}
	}
	return 0, errorf(verbs.ErrInvalid, "%v is not in the GID table %v", addr, d.gids)
}
