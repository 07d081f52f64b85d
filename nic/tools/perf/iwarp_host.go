// Where one side of a two-process iWARP test lives, and the MSS its FPDUs
// are sized for. In the embedded mode that is the host's kernel TCP alone
// (the side channel and the iWARP streams; no RoCE NIC, no UDP socket);
// in the TAP mode the NIC on its TAP (nic.go's host), whose own TCP
// carries both.

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
