// GIDs as RoCEv2 has them: IP addresses in IPv6 form (IBTA Annex A17).

package verbs

import "net/netip"

// GIDFromAddr returns the RoCEv2 GID of an IP address: IPv4 addresses
// (plain or already mapped) become ::ffff:a.b.c.d, IPv6 addresses are kept;
// any IPv6 zone is dropped. It returns the zero Addr for an invalid one.
func GIDFromAddr(a netip.Addr) netip.Addr {
	if !a.IsValid() {
		return netip.Addr{}
	}
	return netip.AddrFrom16(a.As16())
}
