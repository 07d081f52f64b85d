// Host segmentation and checksum offload (a Device opened with Offload,
// vnet.go): the Host reads frames with their virtio_net_hdr, finishes the
// partial checksums the kernel leaves and passes TCP super-segments to the
// TCP stack whole; it sends netstack's TCP super-segments with one header
// and lets the kernel cut them into wire segments (TSO), on the bridge or
// in whoever receives them.
//
//	netstack ── 64 KiB TCP segment ──▶ SendIPOffload ──▶ [vnet hdr | frame] ──▶ TAP
//	TAP ──▶ [vnet hdr | frame] ──▶ check, finish csum ──▶ handleFrame ──▶ netstack
//
// Receive checksum offload: a TCP frame whose header says NEEDS_CSUM (the
// kernel made it, for a local sender, and never computed the checksum) or
// DATA_VALID (the kernel verified it) needs no check, as a NIC with
// receive checksum offload tells its driver (Linux's CHECKSUM_PARTIAL and
// CHECKSUM_UNNECESSARY). With a SetTCPValidated handler such a frame goes
// to it as it is, its partial checksum unfinished, and netstack skips its
// own verification (TCPStack.DeliverValidated): neither pays a pass over
// the payload. The capture still shows the checksum finished (capture).
// A frame with neither flag is verified by netstack as before.
//
// Everything else the Host sends (RoCEv2, ARP, ND, ICMP) goes out behind a
// zero header, unchanged.

package tap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// vnetIO is a FrameIO whose frames can carry a virtio_net_hdr: a Device
// (device_vnet.go). The Host uses it when Offload reports true.
type vnetIO interface {
	FrameIO
	Offload() bool
	ReadVnet(b []byte) (int, error)
	WriteVnet(v VnetHdr, frame []byte) error
}

// gsoBufLen is the size of a transmit buffer for a TCP super-segment.
const gsoBufLen = ethHeaderLen + gsoMaxPacket

// TxOffload says what the link must finish in an IP packet the TCP stack
// sends with host offload (TCPStackConfig.OutputOffload): the zero value is
// a finished packet.
type TxOffload struct {
	// NeedsCsum: the transport checksum at L3HdrLen+CsumOffset holds only
	// the pseudo-header sum.
	NeedsCsum  bool
	L3HdrLen   uint16
	CsumOffset uint16
	// MSS, if not 0, is the payload per wire segment of a TCP packet that
	// may be longer than the MTU (a super-segment).
	MSS uint16
}

// Offload reports whether the Host moves frames with a virtio_net_hdr:
// its IO is an offload Device, and SendIPOffload may be used.
func (h *Host) Offload() bool { return h.vio != nil }

// handleVnetFrame is the receive path for a frame behind its
// virtio_net_hdr. A malformed header, or a frame over the MTU that is not a
// super-segment, is counted and dropped; a partial checksum is finished
// (the kernel left it to the NIC, as to hardware that offers CSUM); then the
// frame takes the usual path, a super-segment whole.
func (h *Host) handleVnetFrame(b []byte) {
	if len(b) < vnetHdrLen {
		h.dropVnet(b)
		return
	}
	v, frame := parseVnetHdr(b), b[vnetHdrLen:]
	if v.check(frame) != nil {
		h.dropVnet(frame)
		return
	}
	if v.GSOType == vnetGSONone && len(frame) > h.mtu+ethHeaderLen+4 {
		h.cnt.rxFrames.Add(1)
		h.cnt.rxBytes.Add(uint64(len(frame)))
		h.cnt.malformed.Add(1)
		return
	}
	h.arrived(frame, v) // a partial checksum shown finished, as on the wire
	if h.diverted(frame, v) {
		return
	}
	trusted := h.tcpChecksumTrusted(frame, v)
	switch {
	case trusted:
		h.cnt.csumValidated.Add(1)
	case v.Flags&vnetFlagNeedsCsum != 0:
		finishChecksum(frame, v)
		h.cnt.csumFinished.Add(1)
	}
	if v.GSOType != vnetGSONone {
		h.cnt.gsoRx.Add(1)
	}
	h.process(frame, trusted)
}

// SetTCPValidated installs the function that receives, instead of the
// SetTCP one, the TCP packets whose checksum the kernel vouched for
// (receive checksum offload, the file comment): a partial checksum in
// them is left unfinished, so the function must not check it
// (TCPStack.DeliverValidated). Same contract as SetTCP otherwise; nil
// sends them to the SetTCP function, their checksums finished.
func (h *Host) SetTCPValidated(deliver func(ipPacket []byte)) {
	if deliver == nil {
		h.tcpValid.Store(nil)
		return
	}
	h.tcpValid.Store(&deliver)
}

// tcpChecksumTrusted reports whether frame, read behind v, is a TCP packet
// the kernel vouched for and a SetTCPValidated handler takes: DATA_VALID,
// or NEEDS_CSUM whose range is the TCP checksum's (from the TCP header, at
// its checksum field). Anything else is finished and verified as before.
func (h *Host) tcpChecksumTrusted(frame []byte, v VnetHdr) bool {
	if v.Flags&(vnetFlagNeedsCsum|vnetFlagDataValid) == 0 || h.tcpValid.Load() == nil {
		return false
	}
	l4, ok := tcpHeaderAt(frame)
	if !ok {
		return false
	}
	return v.Flags&vnetFlagNeedsCsum == 0 || (int(v.CsumStart) == l4 && v.CsumOffset == tcpChecksumOffset)
}

// tcpHeaderAt returns where the TCP header of an IPv4 or IPv6 frame
// carrying TCP starts, or false for any other frame. It only classifies:
// the IP header is checked on the usual path.
func tcpHeaderAt(frame []byte) (int, bool) {
	if len(frame) < ethHeaderLen+ipv6HeaderLen {
		return 0, false
	}
	ip := frame[ethHeaderLen:]
	switch binary.BigEndian.Uint16(frame[12:]) {
	case etherTypeIPv4:
		return ethHeaderLen + int(ip[0]&0x0f)*4, ip[9] == ipProtoTCP
	case etherTypeIPv6:
		return ethHeaderLen + ipv6HeaderLen, ip[6] == ipProtoTCP
	}
	return 0, false
}

// dropVnet counts a frame whose virtio_net_hdr is malformed.
func (h *Host) dropVnet(b []byte) {
	h.cnt.rxFrames.Add(1)
	h.cnt.rxBytes.Add(uint64(len(b)))
	h.cnt.vnetMalformed.Add(1)
}

// SendIPOffload is SendIP for a packet of the TCP stack that the kernel
// finishes (o): a partial checksum, and a TCP payload longer than o.MSS cut
// into segments of o.MSS bytes. Only on an offload Host; the zero o is
// SendIP.
func (h *Host) SendIPOffload(ipPacket []byte, o TxOffload) error {
	if o == (TxOffload{}) {
		return h.SendIP(ipPacket)
	}
	v, segs, err := h.vnetFor(ipPacket, o)
	if err != nil {
		return fmt.Errorf("tap: SendIPOffload: %w", err)
	}
	if v.GSOType == vnetGSONone {
		return h.sendIPVnet(ipPacket, v)
	}
	bp := h.gso.Get().(*[]byte)
	defer h.gso.Put(bp)
	if err := h.sendIPIn(*bp, ipPacket, v); err != nil {
		return err
	}
	h.cnt.gsoTx.Add(1)
	h.cnt.gsoTxSegments.Add(uint64(segs))
	return nil
}

// vnetFor builds the virtio_net_hdr of a TCP packet sent with offload o,
// and the number of wire segments it stands for.
func (h *Host) vnetFor(ip []byte, o TxOffload) (VnetHdr, int, error) {
	if h.vio == nil {
		return VnetHdr{}, 0, errors.New("tap: offload on a Host without it")
	}
	l3 := int(o.L3HdrLen)
	if len(ip) < ipv6HeaderLen || len(ip) < l3+20 || len(ip) > gsoMaxPacket || (ip[0]>>4 != 4 && ip[0]>>4 != 6) {
		h.cnt.malformed.Add(1)
		return VnetHdr{}, 0, ErrBadFrame
	}
	var v VnetHdr
	if o.NeedsCsum {
		v.Flags = vnetFlagNeedsCsum
		v.CsumStart = uint16(ethHeaderLen + l3)
		v.CsumOffset = o.CsumOffset
	}
	tcpHdr := int(ip[l3+12]>>4) * 4
	payload := len(ip) - l3 - tcpHdr
	if o.MSS == 0 || payload <= int(o.MSS) {
		return v, 1, nil
	}
	v.GSOType = vnetGSOTCPv4
	if ip[0]>>4 == 6 {
		v.GSOType = vnetGSOTCPv6
	}
	v.GSOSize = o.MSS
	v.HdrLen = uint16(ethHeaderLen + l3 + tcpHdr)
	return v, (payload + int(o.MSS) - 1) / int(o.MSS), nil
}

// sendIPVnet sends a packet of at most the MTU behind v.
func (h *Host) sendIPVnet(ipPacket []byte, v VnetHdr) error {
	if len(ipPacket) > h.mtu {
		h.cnt.tooBig.Add(1)
		return fmt.Errorf("tap: SendIPOffload: %d-byte packet, MTU %d: %w", len(ipPacket), h.mtu, ErrFrameTooBig)
	}
	bp := h.getTx()
	defer h.txBuf.Put(bp)
	return h.sendIPIn(*bp, ipPacket, v)
}

// sendIPIn frames ipPacket in buf (big enough) and sends it behind v.
func (h *Host) sendIPIn(buf, ipPacket []byte, v VnetHdr) error {
	f := buf[:ethHeaderLen+len(ipPacket)]
	copy(f[ethHeaderLen:], ipPacket)
	return h.sendFrameVnet(f, v)
}

// sendFrameVnet sends f, an IP packet checked by vnetFor behind room for
// its Ethernet header, behind v.
func (h *Host) sendFrameVnet(f []byte, v VnetHdr) error {
	ip := f[ethHeaderLen:]
	et, dst := uint16(etherTypeIPv4), netip.Addr{}
	if ip[0]>>4 == 4 {
		dst = netip.AddrFrom4([4]byte(ip[16:20]))
	} else {
		et, dst = etherTypeIPv6, netip.AddrFrom16([16]byte(ip[24:40]))
	}
	binary.BigEndian.PutUint16(f[12:], et)
	if err := h.outputVnet(f, dst, v); err != nil {
		return fmt.Errorf("tap: SendIPOffload: %w", err)
	}
	h.cnt.tcpTx.Add(1)
	return nil
}

// SendFrame is SendIPOffload of the packet frame[FrameHeadroom:], framed
// in place: the Host writes the Ethernet header into the room before the
// packet instead of copying the packet behind one
// (TCPStackConfig.OutputFrame). Only on an offload Host. It may modify
// frame and does not keep it.
func (h *Host) SendFrame(frame []byte, o TxOffload) error {
	if len(frame) < FrameHeadroom {
		h.cnt.malformed.Add(1)
		return fmt.Errorf("tap: SendFrame: %w", ErrBadFrame)
	}
	ip := frame[FrameHeadroom:]
	v, segs, err := h.vnetFor(ip, o)
	if err != nil {
		return fmt.Errorf("tap: SendFrame: %w", err)
	}
	if v.GSOType == vnetGSONone && len(ip) > h.mtu {
		h.cnt.tooBig.Add(1)
		return fmt.Errorf("tap: SendFrame: %d-byte packet, MTU %d: %w", len(ip), h.mtu, ErrFrameTooBig)
	}
	if err := h.sendFrameVnet(frame, v); err != nil {
		return err
	}
	if v.GSOType != vnetGSONone {
		h.cnt.gsoTx.Add(1)
		h.cnt.gsoTxSegments.Add(uint64(segs))
	}
	return nil
}

// capture records a frame the Host sends or reads. A partial checksum is shown
// finished, as the segments it becomes carry it on the wire (and Wireshark,
// validating, would flag the pseudo-header sum as wrong): it is finished in
// place for the capture and put back for the kernel, which finishes it
// itself.
func (h *Host) capture(f []byte, v VnetHdr) {
	if v.Flags&vnetFlagNeedsCsum == 0 || v.check(f) != nil {
		h.pcap.WriteFrameNow(h.stamp, f)
		return
	}
	at := int(v.CsumStart) + int(v.CsumOffset)
	partial := binary.BigEndian.Uint16(f[at:])
	finishChecksum(f, v)
	h.pcap.WriteFrameNow(h.stamp, f)
	binary.BigEndian.PutUint16(f[at:], partial)
}
