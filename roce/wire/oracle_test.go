package wire_test

import (
	"fmt"
	"math/bits"
	"net/netip"
	"strings"
	"testing"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/tsharktest"
)

// The Wireshark oracle (transport/tsharktest/README.md): a capture holding
// every opcode of the table, over IPv4 and IPv6, with and without 802.1Q,
// with varied field values and payload lengths giving every pad count, must
// dissect with no malformed frame and no expert warning (UDP checksums
// checked: the IPv6 frames carry a computed one), every frame as RRoCE, and
// with the fields tshark shows equal to what was encoded.
//
// tshark 4.0 does not know FLUSH (0x1C) and ATOMIC WRITE (0x1D), which 4.4
// added, nor the CNP opcode 0x81 real NICs send (its table has only 0x80):
// it shows them as "Unknown OpCode" and hands the rest of the packet to
// parse_VENDOR (infiniband.vendor), which is not a malformation. For those
// frames only the BTH is compared, and the test asserts that tshark really
// does fall back to the vendor dissection.

type oracleFrame struct {
	h       wire.Headers
	payload int
	frame   []byte
	f       wire.Frame
}

var oracleEncaps = []struct {
	v6, vlan bool
	src, dst string
}{
	{false, false, "192.0.2.1", "192.0.2.2"},
	{false, true, "10.77.0.11", "10.77.0.12"},
	{true, false, "fd00::1", "fd00::2"},
	{true, true, "2001:db8::11", "2001:db8::12"},
}

var oracleSyndromes = []wire.Syndrome{
	wire.ACKSyndrome(wire.CreditsUnlimited), wire.RNRNAKSyndrome(14), wire.NAKSyndrome(wire.NAKPSNSeqError),
	wire.ACKSyndrome(5), wire.NAKSyndrome(wire.NAKRemoteAccess), wire.NAKSyndrome(wire.NAKInvalidRequest),
}

func oracleFrames(t *testing.T) []oracleFrame {
	t.Helper()
	var out []oracleFrame
	seed := 0
	for i := range 256 {
		op := wire.Opcode(i)
		if !op.Valid() {
			continue
		}
		lens := []int{0}
		switch {
		case op == wire.RCAtomicWrite:
			lens = []int{8}
		case op.Info().Payload:
			lens = []int{0, 1, 2, 3, 4, 1023}
		}
		for ei, enc := range oracleEncaps {
			for _, n := range lens {
				seed++
				s := uint64(seed)*0x9E3779B97F4A7C15 ^ uint64(op)<<32
				e := wire.Encap{
					DstMAC: [6]byte{2, 0, 0, 0, 0, 2}, SrcMAC: [6]byte{2, 0, 0, 0, 0, 1},
					VLAN: enc.vlan, TCI: uint16(3<<13 | 10 + ei),
					Src: netip.MustParseAddr(enc.src), Dst: netip.MustParseAddr(enc.dst),
					TOS: byte(seed) & 0xFC, TTL: 64, FlowLabel: uint32(s) & 0xFFFFF, IPID: uint16(seed), DF: true,
					SrcPort: uint16(49152 + seed%16384), DstPort: wire.UDPPort, // ChecksumAuto: computed over IPv6
				}
				h := wire.Headers{
					BTH: wire.BTHFields{
						Opcode: op, SE: seed%2 == 0, MigReq: seed%3 == 0, AckReq: seed%2 == 1,
						PKey:   []uint16{wire.DefaultPKey, 0x8001, 0x7FFF}[seed%3],
						DestQP: uint32(s>>8) & wire.PSNMask, PSN: uint32(s>>32) & wire.PSNMask,
					},
					RETH:      wire.RETHFields{VA: s, RKey: uint32(s >> 16), Length: uint32(n + seed)},
					AETH:      wire.AETHFields{Syndrome: oracleSyndromes[seed%len(oracleSyndromes)], MSN: uint32(s>>40) & wire.PSNMask},
					AtomicETH: wire.AtomicETHFields{VA: s &^ 7, RKey: uint32(s >> 24), SwapAdd: s * 7, Compare: ^s},
					AtomicAck: s ^ 0xA5A5,
					Imm:       uint32(s >> 20),
					IETH:      uint32(s>>28) | 1,
					DETH:      wire.DETHFields{QKey: uint32(s >> 3), SrcQP: uint32(s>>44) & wire.PSNMask},
					FETH:      wire.MakeFETH(wire.FlushPersistence, wire.FlushSelectWholeMR),
				}
				payload := make([]byte, n)
				for j := range payload {
					payload[j] = byte(seed + j)
				}
				of := oracleFrame{h: h, payload: n, frame: wire.AppendFrame(nil, &e, &h, payload)}
				if err := of.f.Decode(of.frame, 0); err != nil {
					t.Fatalf("%v: generated frame does not decode: %v", op, err)
				}
				out = append(out, of)
			}
		}
	}
	return out
}

var oracleFields = []string{
	"_ws.col.Protocol", "_ws.col.Info", "infiniband.vendor", "infiniband.invariant.crc",
	"infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.bth.se",
	"infiniband.bth.m", "infiniband.bth.a", "infiniband.bth.padcnt", "infiniband.bth.p_key",
	"infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
	"infiniband.aeth.syndrome", "infiniband.aeth.msn",
	"infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt", "infiniband.atomicacketh.origremdt",
	"infiniband.immdt", "infiniband.ieth", "infiniband.deth.q_key", "infiniband.deth.srcqp", "data.len",
}

func TestTsharkOracle(t *testing.T) {
	tsharktest.Path(t)
	major, minor, patch := tsharktest.Version(t)
	// Opcodes this tshark shows as "Unknown OpCode" (see above).
	unknown := map[wire.Opcode]bool{wire.CNP: true}
	if major < 4 || major == 4 && minor < 4 {
		unknown[wire.RCFlush], unknown[wire.RCAtomicWrite] = true, true
	}
	t.Logf("tshark %d.%d.%d; expected as Unknown OpCode: %v", major, minor, patch, unknown)

	frames := oracleFrames(t)
	raw := make([][]byte, len(frames))
	for i := range frames {
		raw[i] = frames[i].frame
	}
	pcap := tsharktest.WritePcap(t, "roce-all-opcodes.pcap", raw)
	tsharktest.Check(t, pcap, tsharktest.Options{})

	rows := tsharktest.Fields(t, pcap, tsharktest.Options{}, oracleFields...)
	if len(rows) != len(frames) {
		t.Fatalf("tshark returned %d frames, wrote %d", len(rows), len(frames))
	}
	for i, r := range rows {
		of := &frames[i]
		op := of.h.BTH.Opcode
		name := fmt.Sprintf("frame %d (%v, payload %d, ipv6=%v vlan=%v)", i+1, op, of.payload, of.f.IPv6, of.f.VLAN)
		c := checker{t: t, name: name, row: r}
		if r["_ws.col.Protocol"] != "RRoCE" {
			t.Errorf("%s: protocol %q, want RRoCE", name, r["_ws.col.Protocol"])
		}
		b := of.h.BTH
		c.int("infiniband.bth.opcode", uint64(op))
		c.int("infiniband.bth.destqp", uint64(b.DestQP))
		c.int("infiniband.bth.psn", uint64(b.PSN))
		c.int("infiniband.bth.se", b2u(b.SE))
		c.int("infiniband.bth.m", b2u(b.MigReq))
		c.int("infiniband.bth.a", b2u(b.AckReq))
		c.int("infiniband.bth.padcnt", uint64(wire.PadFor(of.payload)))
		c.int("infiniband.bth.p_key", uint64(b.PKey))
		if unknown[op] {
			if !strings.Contains(r["_ws.col.Info"], "Unknown OpCode") || r["infiniband.vendor"] == "" {
				t.Errorf("%s: tshark %d.%d was expected to show Unknown OpCode and vendor data; Info %q vendor %q",
					name, major, minor, r["_ws.col.Info"], r["infiniband.vendor"])
			}
			if r["infiniband.invariant.crc"] != "" {
				t.Errorf("%s: an Unknown OpCode frame should have no ICRC field", name)
			}
			continue
		}
		if strings.Contains(r["_ws.col.Info"], "Unknown OpCode") {
			t.Errorf("%s: tshark shows Unknown OpCode", name)
		}
		// tshark reads the ICRC's wire bytes big-endian; roce/wire reads
		// them little-endian. Agreeing on its value means agreeing on
		// where every header ends.
		c.int("infiniband.invariant.crc", uint64(bits.ReverseBytes32(of.f.Packet.WireICRC())))
		// data.len includes the pad (transport/tsharktest/README.md,
		// "RoCEv2"); no data, no field.
		if n := of.payload + wire.PadFor(of.payload); n > 0 {
			c.int("data.len", uint64(n))
		} else {
			c.absent("data.len")
		}
		h := &of.h
		for _, hd := range op.Info().Hdrs {
			switch hd {
			case wire.HdrRETH:
				c.int("infiniband.reth.va", h.RETH.VA)
				c.int("infiniband.reth.r_key", uint64(h.RETH.RKey))
				c.int("infiniband.reth.dmalen", uint64(h.RETH.Length))
			case wire.HdrAETH:
				c.int("infiniband.aeth.syndrome", uint64(h.AETH.Syndrome))
				c.int("infiniband.aeth.msn", uint64(h.AETH.MSN))
			case wire.HdrAtomicETH:
				// tshark files the AtomicETH VA and R_Key under reth.
				c.int("infiniband.reth.va", h.AtomicETH.VA)
				c.int("infiniband.reth.r_key", uint64(h.AtomicETH.RKey))
				c.int("infiniband.atomiceth.swapdt", h.AtomicETH.SwapAdd)
				c.int("infiniband.atomiceth.cmpdt", h.AtomicETH.Compare)
			case wire.HdrAtomicAckETH:
				c.int("infiniband.atomicacketh.origremdt", h.AtomicAck)
			case wire.HdrImmDt:
				c.bytes("infiniband.immdt", uint64(h.Imm))
			case wire.HdrIETH:
				c.bytes("infiniband.ieth", uint64(h.IETH))
			case wire.HdrDETH:
				c.int("infiniband.deth.q_key", uint64(h.DETH.QKey))
				c.int("infiniband.deth.srcqp", uint64(h.DETH.SrcQP))
			}
		}
	}
}

type checker struct {
	t    *testing.T
	name string
	row  tsharktest.Row
}

func (c checker) int(field string, want uint64) {
	c.t.Helper()
	if got, ok := c.row.Int(field); !ok || got != want {
		c.t.Errorf("%s: %s = %q, want %d (%#x)", c.name, field, c.row[field], want, want)
	}
}

func (c checker) bytes(field string, want uint64) {
	c.t.Helper()
	if got, ok := c.row.Bytes(field); !ok || got != want {
		c.t.Errorf("%s: %s = %q, want %#x", c.name, field, c.row[field], want)
	}
}

func (c checker) absent(field string) {
	c.t.Helper()
	if v := c.row[field]; v != "" {
		c.t.Errorf("%s: %s = %q, want no such field", c.name, field, v)
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
