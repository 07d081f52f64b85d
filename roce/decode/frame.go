package decode

import (
	"errors"
	"net/netip"
	"time"

	"github.com/rnic/rnic/roce/wire"
)

// Kind is what a frame turned out to be.
type Kind uint8

// Kinds of frames.
const (
	KindOther   Kind = iota // not addressed to the RoCEv2 port: counted, not shown
	KindRoCE                // a RoCEv2 frame roce/wire decodes
	KindUnknown             // addressed to the RoCEv2 port but not decodable
)

// Record is one decoded frame.
type Record struct {
	Index  int           // 1-based frame number within its file (as Wireshark counts)
	Time   time.Duration // since the first frame of the file
	CapLen int           // bytes captured
	Len    int           // bytes on the wire (more than CapLen if the capture cut it)
	Kind   Kind

	// Endpoints, when the frame has an IP header (and UDP ports).
	Src, Dst netip.AddrPort
	VLAN     int // VLAN ID, -1 when untagged

	// KindUnknown: why roce/wire rejected the frame, and the BTH opcode
	// byte when one was captured (-1 otherwise).
	Err    wire.Error
	Opcode int

	// KindRoCE: the decoded frame (views into the bytes given to
	// DecodeFrame) and the ICRC verdict.
	Frame     wire.Frame
	ICRCOK    bool
	ICRCWant  uint32 // computed ICRC (wire.GetICRC convention)
	ICRCGiven uint32 // ICRC carried by the frame
}

// DecodeFramePorts decodes one Ethernet frame when several UDP ports carry
// RoCEv2 (two NICs sharing an address differ by port): a frame to any of
// ports is RoCEv2. An empty list means 4791.
func DecodeFramePorts(data []byte, ports []uint16) Record {
	if len(ports) == 0 {
		return DecodeFrame(data, 0)
	}
	if c := classify(data); c.udp {
		for _, p := range ports {
			if c.dport == p {
				return DecodeFrame(data, p)
			}
		}
	}
	return DecodeFrame(data, ports[0])
}

// DecodeFrame decodes one Ethernet frame. port is the RoCEv2 UDP
// destination port (0 means 4791). The Record keeps views into data.
func DecodeFrame(data []byte, port uint16) Record {
	if port == 0 {
		port = wire.UDPPort
	}
	r := Record{CapLen: len(data), Len: len(data), Opcode: -1}
	c := classify(data)
	r.VLAN = c.vlan
	if c.src.IsValid() {
		r.Src, r.Dst = netip.AddrPortFrom(c.src, c.sport), netip.AddrPortFrom(c.dst, c.dport)
	}
	err := r.Frame.Decode(data, port)
	if err == nil {
		r.Kind = KindRoCE
		r.ICRCWant, r.ICRCGiven = r.Frame.ComputeICRC(), r.Frame.Packet.WireICRC()
		r.ICRCOK = r.ICRCWant == r.ICRCGiven
		return r
	}
	r.Frame = wire.Frame{}
	if !c.udp || c.dport != port {
		r.Kind = KindOther
		return r
	}
	r.Kind = KindUnknown
	if !errors.As(err, &r.Err) {
		r.Err = wire.ErrTruncated // unreachable: roce/wire only returns wire.Error
	}
	if op, ok := bthOpcode(data, c); ok {
		r.Opcode = int(op)
	}
	return r
}

// bthOpcode finds the first BTH byte of a frame classify has walked, for
// the diagnosis of an undecodable frame.
func bthOpcode(data []byte, c l4) (byte, bool) {
	off := wire.EthLen
	if c.vlan >= 0 {
		off += wire.VLANLen
	}
	if c.src.Is4() {
		off += int(data[off]&0x0F) * 4
	} else {
		off += wire.IPv6Len
	}
	off += wire.UDPLen
	if off >= len(data) {
		return 0, false
	}
	return data[off], true
}
