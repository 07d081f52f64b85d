// Crafted frames: a case describes a packet by its fields, relative to
// the run (PSNs from the DUT's expected PSN, keys and addresses of named
// MRs), and the tester builds the bytes, sealed with a correct ICRC unless
// the case breaks it.

package conform

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/roce/wire"
)

// U32 and U64 are values known once a case runs (a key, an address).
type (
	U32 func(r *Run) uint32
	U64 func(r *Run) uint64
)

// Val32 and Val64 are constants.
func Val32(v uint32) U32 { return func(*Run) uint32 { return v } }
func Val64(v uint64) U64 { return func(*Run) uint64 { return v } }

// RKeyOf is the rkey of the named MR; LKeyOf its lkey.
func RKeyOf(mr string) U32 { return func(r *Run) uint32 { return r.MR(mr).RKey } }
func LKeyOf(mr string) U32 { return func(r *Run) uint32 { return r.MR(mr).LKey } }

// BadRKey is an rkey that names no region: the named MR's with its key
// byte and top index bits changed.
func BadRKey(mr string) U32 { return func(r *Run) uint32 { return r.MR(mr).RKey ^ 0x5A0000A5 } }

// AddrOf is the address off bytes into the named MR (off may be negative
// or beyond its end).
func AddrOf(mr string, off int64) U64 {
	return func(r *Run) uint64 { return uint64(int64(r.MR(mr).Addr) + off) }
}

// RETH is a crafted RETH; nil VA and RKey mean DefaultMR's start and rkey.
type RETH struct {
	VA   U64
	RKey U32
	Len  uint32
}

// Atomic is a crafted AtomicETH; nil VA and RKey mean DefaultMR's.
type Atomic struct {
	VA      U64
	RKey    U32
	SwapAdd uint64
	Compare uint64
}

// DETH is a crafted DETH (UD).
type DETH struct {
	QKey  uint32
	SrcQP uint32
}

// AETH is a crafted AETH (the tester answering the DUT's requests).
type AETH struct {
	Syndrome wire.Syndrome
	MSN      uint32
}

// Pkt is a packet the tester sends to the DUT's QP.
type Pkt struct {
	Op wire.Opcode
	// PSN is relative to the DUT's first expected PSN (Run.PSN), or with
	// Resp to the DUT's first request PSN (Run.DUTPSN): a response to a
	// request of the DUT's.
	PSN     int
	Resp    bool
	AckReq  bool
	SE      bool
	Payload []byte
	RETH    *RETH
	Atomic  *Atomic
	DETH    *DETH
	AETH    *AETH
	// AtomicAck is an ATOMIC Acknowledge's original remote data.
	AtomicAck uint64
	// FETH is a FLUSH's FETH word (wire.MakeFETH).
	FETH uint32
	Imm  uint32
	// Inv is the IETH's rkey (nil: DefaultMR's).
	Inv U32
	// Edit, if set, changes the headers before they are encoded (TVer,
	// P_Key, DestQP, reserved bits...).
	Edit func(r *Run, h *wire.Headers)
	// Raw, if set, edits the encoded transport packet (BTH through the
	// ICRC placeholder) before the ICRC is computed: pad bytes, PadCnt.
	Raw func(pkt []byte)
	// BadICRC sends the packet with its ICRC inverted.
	BadICRC bool
}

func (p *Pkt) headers(r *Run) wire.Headers {
	psn := r.PSN(p.PSN)
	if p.Resp {
		psn = r.DUTPSN(p.PSN)
	}
	h := wire.Headers{BTH: wire.BTHFields{Opcode: p.Op, SE: p.SE, PKey: wire.DefaultPKey,
		DestQP: r.QP.QPN, AckReq: p.AckReq, PSN: psn}, AtomicAck: p.AtomicAck}
	if p.AETH != nil {
		h.AETH = wire.AETHFields{Syndrome: p.AETH.Syndrome, MSN: p.AETH.MSN}
	}
	if p.RETH != nil {
		h.RETH = wire.RETHFields{VA: or64(p.RETH.VA, AddrOf(DefaultMR, 0))(r),
			RKey: or32(p.RETH.RKey, RKeyOf(DefaultMR))(r), Length: p.RETH.Len}
	}
	if p.Atomic != nil {
		h.AtomicETH = wire.AtomicETHFields{VA: or64(p.Atomic.VA, AddrOf(DefaultMR, 0))(r),
			RKey: or32(p.Atomic.RKey, RKeyOf(DefaultMR))(r), SwapAdd: p.Atomic.SwapAdd, Compare: p.Atomic.Compare}
	}
	if p.DETH != nil {
		h.DETH = wire.DETHFields{QKey: p.DETH.QKey, SrcQP: p.DETH.SrcQP}
	}
	h.Imm, h.FETH = p.Imm, p.FETH
	h.IETH = or32(p.Inv, RKeyOf(DefaultMR))(r)
	return h
}

func or32(v, def U32) U32 {
	if v != nil {
		return v
	}
	return def
}

func or64(v, def U64) U64 {
	if v != nil {
		return v
	}
	return def
}

// Build returns the frame's bytes for this run.
func (p *Pkt) Build(r *Run) []byte {
	h := p.headers(r)
	if p.Edit != nil {
		p.Edit(r, &h)
	}
	e := r.Port.Encap(r.DUTAddr)
	b := wire.AppendFrame(nil, &e, &h, p.Payload)
	if p.Raw != nil {
		p.Raw(b[e.EncapLen():])
		Reseal(b)
	}
	if p.BadICRC {
		n := len(b)
		binary.LittleEndian.PutUint32(b[n-4:], ^binary.LittleEndian.Uint32(b[n-4:]))
	}
	return b
}

// String names the packet in evidence.
func (p *Pkt) String() string {
	if p.Resp {
		return fmt.Sprintf("%v dut psn%+d", p.Op, p.PSN)
	}
	return fmt.Sprintf("%v psn%+d", p.Op, p.PSN)
}

// Reseal recomputes the ICRC (and clears the UDP checksum over IPv4, or
// recomputes it over IPv6) of a RoCEv2 frame in place, without judging
// its transport headers: it works on frames wire.Frame.Decode refuses
// (bad TVer, bad pad). Frames that are not IP/UDP are left alone.
func Reseal(frame []byte) {
	l3, ipLen, ok := ipHeader(frame)
	if !ok || len(frame) < l3+ipLen+wire.UDPLen+wire.BTHLen+wire.ICRCLen {
		return
	}
	ip := frame[l3 : l3+ipLen]
	udp := frame[l3+ipLen:]
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen < wire.UDPLen+wire.BTHLen+wire.ICRCLen || ulen > len(udp) {
		return
	}
	udp = udp[:ulen]
	pkt := udp[wire.UDPLen:]
	wire.PutICRC(pkt, wire.ICRC(ip, udp, pkt[:len(pkt)-wire.ICRCLen]))
	if ipLen == wire.IPv6Len {
		udp[6], udp[7] = 0, 0
		sum := udpSum(ip, udp)
		binary.BigEndian.PutUint16(udp[6:], sum)
	} else {
		udp[6], udp[7] = 0, 0
	}
}

// ipHeader finds the IP header of an Ethernet frame (no VLAN tag).
func ipHeader(f []byte) (l3, n int, ok bool) {
	if len(f) < wire.EthLen+wire.IPv4Len {
		return 0, 0, false
	}
	switch binary.BigEndian.Uint16(f[12:]) {
	case wire.EtherTypeIPv4:
		return wire.EthLen, int(f[wire.EthLen]&0x0F) * 4, true
	case wire.EtherTypeIPv6:
		return wire.EthLen, wire.IPv6Len, len(f) >= wire.EthLen+wire.IPv6Len
	}
	return 0, 0, false
}

// udpSum is the UDP checksum over the IPv6 pseudo-header.
func udpSum(ip, udp []byte) uint16 {
	var s uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			s += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			s += uint32(b[len(b)-1]) << 8
		}
	}
	add(ip[8:40])
	s += uint32(len(udp)) + 17
	add(udp)
	for s>>16 != 0 {
		s = s&0xFFFF + s>>16
	}
	c := ^uint16(s)
	if c == 0 {
		c = 0xFFFF
	}
	return c
}

func parseAddr(s string) (netip.Addr, error) { return netip.ParseAddr(s) }
