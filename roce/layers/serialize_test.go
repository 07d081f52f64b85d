package layers_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/gopacket/gopacket"
	glayers "github.com/gopacket/gopacket/layers"

	rlayers "github.com/rnic/rnic/roce/layers"
	"github.com/rnic/rnic/roce/wire"
)

// validOpcodes lists every opcode the roce/wire table knows.
func validOpcodes() []wire.Opcode {
	var ops []wire.Opcode
	for i := range 256 {
		if op := wire.Opcode(i); op.Valid() {
			ops = append(ops, op)
		}
	}
	return ops
}

var syndromes = []wire.Syndrome{
	wire.ACKSyndrome(wire.CreditsUnlimited), wire.RNRNAKSyndrome(14),
	wire.NAKSyndrome(wire.NAKPSNSeqError), wire.ACKSyndrome(5), wire.NAKSyndrome(wire.NAKRemoteAccess),
}

// testHeaders fills every header field with values that vary with op and
// seed, so that no field is tested only at zero.
func testHeaders(op wire.Opcode, seed int) wire.Headers {
	s := (uint64(seed)+1)*0x9E3779B97F4A7C15 ^ uint64(op)<<40
	return wire.Headers{
		BTH: wire.BTHFields{
			Opcode: op, SE: seed%2 == 1, MigReq: seed%3 == 0,
			PKey: []uint16{wire.DefaultPKey, 0x8001}[seed%2], FECN: seed%5 == 1, BECN: seed%4 == 2,
			DestQP: uint32(s) & wire.PSNMask, AckReq: seed%2 == 0, PSN: uint32(s>>24) & wire.PSNMask,
		},
		RETH:      wire.RETHFields{VA: s, RKey: uint32(s >> 32), Length: uint32(seed*977) % 4096},
		AETH:      wire.AETHFields{Syndrome: syndromes[seed%len(syndromes)], MSN: uint32(s>>8) & wire.PSNMask},
		AtomicETH: wire.AtomicETHFields{VA: s &^ 7, RKey: uint32(s>>16) | 1, SwapAdd: s * 3, Compare: ^s},
		AtomicAck: s ^ 0x5555,
		Imm:       uint32(s >> 12),
		IETH:      uint32(s>>20) | 0x100,
		DETH:      wire.DETHFields{QKey: 0x11111111 + uint32(seed), SrcQP: uint32(s>>40) & wire.PSNMask},
		FETH:      wire.MakeFETH(uint8(seed%3+1), uint8(seed%2)),
	}
}

type encapCase struct {
	name       string
	v6, vlan   bool
	tos, ttl   uint8
	flowLabel  uint32
	srcA, dstA string
}

var encapCases = []encapCase{
	{"ipv4", false, false, 0x02, 64, 0, "192.0.2.1", "192.0.2.2"},
	{"ipv4-vlan", false, true, 0xC2, 17, 0, "10.77.0.11", "10.77.0.12"},
	{"ipv6", true, false, 0x02, 255, 0x12345, "fd00::1", "fd00::2"},
	{"ipv6-vlan", true, true, 0x60, 1, 0xFFFFF, "2001:db8::11", "2001:db8::12"},
}

func (c encapCase) encap(seed int) wire.Encap {
	return wire.Encap{
		DstMAC: [6]byte{2, 0, 0, 0, 0, 2}, SrcMAC: [6]byte{2, 0, 0, 0, 0, byte(seed)},
		VLAN: c.vlan, TCI: uint16(5<<13 | 100 + seed%7),
		Src: netip.MustParseAddr(c.srcA), Dst: netip.MustParseAddr(c.dstA),
		TOS: c.tos, TTL: c.ttl, FlowLabel: c.flowLabel, IPID: uint16(seed * 31), DF: true,
		SrcPort: uint16(49152 + seed), DstPort: wire.UDPPort, UDPChecksum: wire.ChecksumCompute,
	}
}

// gopacketFrame builds the frame of e, h and payload with
// gopacket.SerializeLayers and seals its ICRC.
func gopacketFrame(t testing.TB, e *wire.Encap, h *wire.Headers, payload []byte) []byte {
	t.Helper()
	eth := &glayers.Ethernet{SrcMAC: e.SrcMAC[:], DstMAC: e.DstMAC[:], EthernetType: glayers.EthernetTypeIPv4}
	ls := []gopacket.SerializableLayer{eth}
	ipType := glayers.EthernetTypeIPv4
	var ip gopacket.NetworkLayer
	if e.IPv6() {
		ipType = glayers.EthernetTypeIPv6
		ip = &glayers.IPv6{Version: 6, TrafficClass: e.TOS, FlowLabel: e.FlowLabel,
			NextHeader: glayers.IPProtocolUDP, HopLimit: e.TTL, SrcIP: e.Src.AsSlice(), DstIP: e.Dst.AsSlice()}
	} else {
		ip = &glayers.IPv4{Version: 4, TOS: e.TOS, Id: e.IPID, Flags: glayers.IPv4DontFragment, TTL: e.TTL,
			Protocol: glayers.IPProtocolUDP, SrcIP: e.Src.AsSlice(), DstIP: e.Dst.AsSlice()}
	}
	eth.EthernetType = ipType
	if e.VLAN {
		eth.EthernetType = glayers.EthernetTypeDot1Q
		ls = append(ls, &glayers.Dot1Q{Priority: uint8(e.TCI >> 13), DropEligible: e.TCI&0x1000 != 0,
			VLANIdentifier: e.TCI & 0xFFF, Type: ipType})
	}
	udp := &glayers.UDP{SrcPort: glayers.UDPPort(e.SrcPort), DstPort: glayers.UDPPort(e.DstPort)}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	ls = append(ls, ip.(gopacket.SerializableLayer), udp)
	ls = append(ls, rlayers.SerializableLayers(h)...)
	ls = append(ls, gopacket.Payload(payload))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatalf("SerializeLayers: %v", err)
	}
	b := buf.Bytes()
	if err := rlayers.SealICRC(b); err != nil {
		t.Fatalf("SealICRC: %v", err)
	}
	return b
}

func payloadLens(op wire.Opcode) []int {
	switch {
	case op == wire.RCAtomicWrite:
		return []int{8}
	case op.Info().Payload:
		return []int{0, 1, 2, 3, 4, 7, 1024}
	}
	return []int{0}
}

// TestSerialize: for every opcode, over IPv4 and IPv6 with and without
// VLAN, with payloads giving pad 0..3, gopacket.SerializeLayers + SealICRC
// builds the same bytes as roce/wire's encoder, which roce/wire decodes back
// to the same fields with a valid ICRC, and gopacket decodes back to the
// same layers.
func TestSerialize(t *testing.T) {
	seed := 0
	for _, op := range validOpcodes() {
		for _, c := range encapCases {
			for _, n := range payloadLens(op) {
				seed++
				name := fmt.Sprintf("%v/%s/%d", op, c.name, n)
				e := c.encap(seed)
				h := testHeaders(op, seed)
				payload := bytes.Repeat([]byte{byte(seed)}, n)
				got := gopacketFrame(t, &e, &h, payload)
				want := ethPad(wire.AppendFrame(nil, &e, &h, payload))
				if !bytes.Equal(got, want) {
					t.Errorf("%s: gopacket frame differs from roce/wire's\n got %x\nwant %x", name, got, want)
					continue
				}
				var f wire.Frame
				if err := f.Decode(got, 0); err != nil {
					t.Errorf("%s: wire decode: %v", name, err)
					continue
				}
				if !f.VerifyICRC() {
					t.Errorf("%s: ICRC does not verify", name)
				}
				wantH := h
				wantH.BTH.PadCnt = wire.PadFor(n)
				if got := f.Packet.Headers(); !sameHeaders(op, got, wantH) {
					t.Errorf("%s: headers %+v, want %+v", name, got, wantH)
				}
				if !bytes.Equal(f.Packet.Payload(), payload) {
					t.Errorf("%s: payload differs", name)
				}
				pkt := gopacket.NewPacket(got, glayers.LayerTypeEthernet, gopacket.Default)
				if el := pkt.ErrorLayer(); el != nil {
					t.Errorf("%s: gopacket decode: %v", name, el.Error())
					continue
				}
				var types []gopacket.LayerType
				for _, l := range pkt.Layers() {
					types = append(types, l.LayerType())
					compareLayer(t, name, l, &f.Packet)
				}
				if want := expectedTypes(&f); !slices.Equal(types, want) {
					t.Errorf("%s: layers %v, want %v", name, types, want)
				}
				if !rlayers.VerifyICRC(pkt) {
					t.Errorf("%s: VerifyICRC false", name)
				}
			}
		}
	}
}

// ethPad pads a frame to the 60-byte Ethernet minimum with zeros, as
// gopacket's Ethernet.SerializeTo does (roce/wire leaves that to the NIC).
func ethPad(b []byte) []byte {
	for len(b) < 60 {
		b = append(b, 0)
	}
	return b
}

// sameHeaders compares the headers op carries.
func sameHeaders(op wire.Opcode, a, b wire.Headers) bool {
	info := op.Info()
	if a.BTH != b.BTH {
		return false
	}
	for _, h := range info.Hdrs {
		var same bool
		switch h {
		case wire.HdrRETH:
			same = a.RETH == b.RETH
		case wire.HdrAETH:
			same = a.AETH == b.AETH
		case wire.HdrAtomicETH:
			same = a.AtomicETH == b.AtomicETH
		case wire.HdrAtomicAckETH:
			same = a.AtomicAck == b.AtomicAck
		case wire.HdrImmDt:
			same = a.Imm == b.Imm
		case wire.HdrIETH:
			same = a.IETH == b.IETH
		case wire.HdrDETH:
			same = a.DETH == b.DETH
		case wire.HdrFETH:
			same = a.FETH == b.FETH
		case wire.HdrCNPPad:
			same = true
		}
		if !same {
			return false
		}
	}
	return true
}

// TestReserializeCaptures: the layers gopacket decodes from a real frame
// serialize back to the same bytes (the BTH writes the ICRC it decoded), and
// SealICRC on a copy with a zeroed ICRC restores it.
func TestReserializeCaptures(t *testing.T) {
	for _, rf := range roceFrames(t) {
		pkt := gopacket.NewPacket(rf.bytes, glayers.LayerTypeEthernet, gopacket.Default)
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializePacket(buf, gopacket.SerializeOptions{}, pkt); err != nil {
			t.Fatalf("%s: %v", rf.name, err)
		}
		want := ethPad(rf.bytes[:len(rf.bytes)-len(rf.wire.Trailer())])
		if got := buf.Bytes(); !bytes.Equal(got, want) {
			t.Errorf("%s: re-serialized frame differs\n got %x\nwant %x", rf.name, got, want)
		}
		c := slices.Clone(rf.bytes)
		wire.PutICRC(c[:len(c)-len(rf.wire.Trailer())], 0)
		if err := rlayers.SealICRC(c); err != nil || !bytes.Equal(c, rf.bytes) {
			t.Errorf("%s: SealICRC did not restore the frame (err %v)", rf.name, err)
		}
	}
}

// TestSerializeErrors: what BTH.SerializeTo refuses.
func TestSerializeErrors(t *testing.T) {
	opts := gopacket.SerializeOptions{FixLengths: true}
	for name, ls := range map[string][]gopacket.SerializableLayer{
		"bad opcode":     {&rlayers.BTH{BTHFields: wire.BTHFields{Opcode: 0x1F}}},
		"psn too big":    {&rlayers.BTH{BTHFields: wire.BTHFields{Opcode: wire.RCSendOnly, PSN: 1 << 24}}},
		"missing RETH":   {&rlayers.BTH{BTHFields: wire.BTHFields{Opcode: wire.RCReadRequest}}},
		"msn too big":    {&rlayers.AETH{AETHFields: wire.AETHFields{MSN: 1 << 24}}},
		"src qp too big": {&rlayers.DETH{DETHFields: wire.DETHFields{SrcQP: 1 << 24}}},
	} {
		if err := gopacket.SerializeLayers(gopacket.NewSerializeBuffer(), opts, ls...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := rlayers.SealICRC([]byte{1, 2, 3}); err == nil {
		t.Errorf("SealICRC of garbage: no error")
	}
}
