// The MSS an iWARP side's FPDUs are sized for, from the side channel,
// which runs between the same two addresses as the iWARP streams: in the
// embedded mode on the host's kernel TCP (nic.go's host without a RoCE
// NIC), in the TAP mode on the NIC's own TCP.

package perf

import (
	"net"
	"net/netip"
	"syscall"

	"github.com/rnic/rnic/nic/embedded"
)

// iwarpMSS is the MSS this side's FPDUs are sized for (RFC 5044 §4.5: one
// FPDU per TCP segment), given the side channel conn, which runs between
// the same two addresses as the iWARP streams: in the TAP mode a segment
// on the TAP's Ethernet; in the embedded mode loopback's (IWARPMSS, as in
// one process) towards a loopback peer, else the MSS the kernel's TCP
// uses on conn.
func iwarpMSS(r *resolved, conn net.Conn) int {
	peer := peerAddr(conn)
	switch {
	case r.TAP != nil:
		return tapMSS(r.TAP.MTU, peer)
	case peer.IsLoopback():
		return IWARPMSS
	}
	if m := kernelMSS(conn); m >= 536 { // RFC 9293's default MSS is the floor
		return m
	}
	return embedded.IWARPDefaultMSS
}

// kernelMSS is a kernel TCP connection's current MSS (TCP_MAXSEG), or 0.
func kernelMSS(conn net.Conn) int {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	mss := 0
	rc.Control(func(fd uintptr) {
		mss, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG)
	})
	return mss
}

// peerAddr is the address at the other end of conn.
func peerAddr(conn net.Conn) netip.Addr {
	if a, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
