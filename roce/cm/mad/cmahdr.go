package mad

import (
	"encoding/binary"
	"net/netip"
)

// rdma_cm's header in the REQ's private data (IBA Vol 1 Annex A11, "RDMA
// IP CM Service"; Linux cma.c struct cma_hdr), 36 bytes in front of the
// consumer's private data:
//
//	0: CMAVersion (0x00) | 1: IPVersion (high nibble: 4 or 6) | 2: SrcPort (16)
//	4: SrcAddr (16 bytes) | 20: DstAddr (16 bytes)
//
// An IPv4 address sits in the last 4 bytes of its field, the rest zero (not
// IPv4-mapped). The REQ's service ID carries the destination port:
// 0x0000000001 | port space (0x06 TCP, 0x11 UDP, 0x3F IB) | port.

// CMAHeaderLen is the size of the rdma_cm header.
const CMAHeaderLen = 36

// MaxREQUserData is what a REQ leaves an rdma_cm consumer (92 − 36).
const MaxREQUserData = REQPrivateDataLen - CMAHeaderLen

// rdma_cm port spaces (enum rdma_ucm_port_space).
const (
	PortSpaceTCP = 0x0106
	PortSpaceUDP = 0x0111
	PortSpaceIB  = 0x013F
)

// ServiceID returns the IB service ID rdma_cm uses for port in port space
// ps (RDMA_PS_TCP for RC connections: 0x0000000001060000 | port).
func ServiceID(ps uint16, port uint16) uint64 { return uint64(ps)<<16 | uint64(port) }

// ServicePort splits a service ID into its rdma_cm port space and port;
// ok is false when it is not in rdma_cm's IP range.
func ServicePort(sid uint64) (ps, port uint16, ok bool) {
	if sid>>24 != 1 {
		return 0, 0, false
	}
	return uint16(sid >> 16), uint16(sid), true
}

// CMAHeader is the decoded rdma_cm header.
type CMAHeader struct {
	Version   uint8 // 0x00
	IPVersion uint8 // 4 or 6
	SrcPort   uint16
	Src, Dst  netip.Addr
}

// Encode writes h into b (CMAHeaderLen bytes).
func (h *CMAHeader) Encode(b []byte) error {
	if len(b) < CMAHeaderLen || !h.Src.IsValid() || !h.Dst.IsValid() || h.Src.Unmap().Is4() != h.Dst.Unmap().Is4() {
		return ErrBadCMAHeader
	}
	clear(b[:CMAHeaderLen])
	b[0] = h.Version
	binary.BigEndian.PutUint16(b[2:], h.SrcPort)
	if s, d := h.Src.Unmap(), h.Dst.Unmap(); s.Is4() {
		b[1] = 4 << 4
		s4, d4 := s.As4(), d.As4()
		copy(b[16:20], s4[:])
		copy(b[32:36], d4[:])
	} else {
		b[1] = 6 << 4
		s16, d16 := s.As16(), d.As16()
		copy(b[4:20], s16[:])
		copy(b[20:36], d16[:])
	}
	return nil
}

// Decode reads an rdma_cm header from b. It rejects an unknown version or
// IP version (cma_check_req_qp_type / cma_save_ip_info refuse them too).
func (h *CMAHeader) Decode(b []byte) error {
	if len(b) < CMAHeaderLen || b[0] != 0 {
		return ErrBadCMAHeader
	}
	*h = CMAHeader{Version: b[0], IPVersion: b[1] >> 4, SrcPort: binary.BigEndian.Uint16(b[2:])}
	switch h.IPVersion {
	case 4:
		h.Src = netip.AddrFrom4([4]byte(b[16:20]))
		h.Dst = netip.AddrFrom4([4]byte(b[32:36]))
	case 6:
		h.Src = netip.AddrFrom16([16]byte(b[4:20]))
		h.Dst = netip.AddrFrom16([16]byte(b[20:36]))
	default:
		return ErrBadCMAHeader
	}
	return nil
}
