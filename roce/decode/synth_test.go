package decode

import (
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rnic/rnic/roce/wire"
)

// capFrame is a frame to write into a test capture; length is its length on
// the wire (0: len(data)), more than len(data) for a cut-short capture.
type capFrame struct {
	data   []byte
	length int
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func frameTime(i int) time.Time { return t0.Add(time.Duration(i) * 1500 * time.Microsecond) }

// writePcap writes frames as a classic microsecond pcap.
func writePcap(t testing.TB, path string, frames []capFrame) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for i, fr := range frames {
		n := fr.length
		if n == 0 {
			n = len(fr.data)
		}
		ci := gopacket.CaptureInfo{Timestamp: frameTime(i), CaptureLength: len(fr.data), Length: n}
		if err := w.WritePacket(ci, fr.data); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func encap(v6, vlan bool, seed int) wire.Encap {
	e := wire.Encap{
		DstMAC: [6]byte{2, 0, 0, 0, 0, 2}, SrcMAC: [6]byte{2, 0, 0, 0, 0, 1},
		VLAN: vlan, TCI: uint16(100 + seed%3),
		Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("192.0.2.2"),
		TTL: 64, DF: true, IPID: uint16(seed), SrcPort: uint16(49152 + seed), DstPort: wire.UDPPort,
	}
	if v6 {
		e.Src, e.Dst = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	}
	return e
}

var synthSyndromes = []wire.Syndrome{
	wire.ACKSyndrome(wire.CreditsUnlimited), wire.ACKSyndrome(7), wire.RNRNAKSyndrome(14),
	wire.NAKSyndrome(wire.NAKPSNSeqError), wire.NAKSyndrome(wire.NAKInvalidRequest),
	wire.NAKSyndrome(wire.NAKRemoteAccess), wire.NAKSyndrome(wire.NAKRemoteOpError),
}

// synthFrames is a deterministic capture exercising every line format:
// every opcode (with every extension header, flags, pads, VLAN, IPv6),
// every AETH syndrome kind, a bad ICRC, undecodable RoCEv2-port frames and
// traffic that must only be counted.
func synthFrames(t testing.TB) []capFrame {
	t.Helper()
	var out []capFrame
	add := func(b []byte) { out = append(out, capFrame{data: b}) }

	// ARP request: not IP, counted only.
	arp := make([]byte, 42)
	copy(arp, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06})
	add(arp)

	seed := 0
	for i := range 256 {
		op := wire.Opcode(i)
		if !op.Valid() {
			continue
		}
		seed++
		e := encap(seed%2 == 0, seed%3 == 0, seed)
		s := uint64(seed) * 0x9E3779B97F4A7C15
		h := wire.Headers{
			BTH: wire.BTHFields{Opcode: op, SE: seed%4 == 1, MigReq: seed%5 == 0, AckReq: op.Info().AckRequired,
				PKey: wire.DefaultPKey, DestQP: uint32(s) & wire.PSNMask, PSN: uint32(s>>24) & wire.PSNMask,
				FECN: op == wire.CNP, BECN: op == wire.CNP || seed%7 == 0},
			RETH:      wire.RETHFields{VA: s >> 8, RKey: uint32(s >> 40), Length: uint32(seed * 100)},
			AETH:      wire.AETHFields{Syndrome: synthSyndromes[seed%len(synthSyndromes)], MSN: uint32(seed)},
			AtomicETH: wire.AtomicETHFields{VA: s &^ 7, RKey: uint32(s >> 16), SwapAdd: uint64(seed), Compare: s >> 4},
			AtomicAck: s ^ 0xffff,
			Imm:       uint32(s >> 12),
			IETH:      uint32(s >> 20),
			DETH:      wire.DETHFields{QKey: 0x11111111, SrcQP: uint32(seed)},
			FETH:      wire.MakeFETH(wire.FlushPersistence, wire.FlushSelectRange),
		}
		if seed == 3 {
			h.BTH.PKey = 0x8001
		}
		n := 0
		if op.Info().Payload {
			n = seed % 9
		}
		if fp := op.Info().FixedPayload; fp != 0 {
			n = fp
		}
		add(wire.AppendFrame(nil, &e, &h, make([]byte, n)))
	}
	e := encap(false, false, 1)
	send := wire.Headers{BTH: wire.BTHFields{Opcode: wire.RCSendOnly, PKey: wire.DefaultPKey, DestQP: 0x11, PSN: 100, AckReq: true}}

	// A bad ICRC: one payload byte changed after sealing.
	bad := wire.AppendFrame(nil, &e, &send, []byte("abcdefgh"))
	bad[len(bad)-6] ^= 0x20
	add(bad)

	// Other traffic: TCP, UDP to another port, UDP *from* 4791.
	tcp := wire.AppendFrame(nil, &e, &send, nil)
	tcp[wire.EthLen+9] = 6
	add(tcp)
	for _, ports := range [][2]uint16{{5000, 53}, {wire.UDPPort, 5000}} {
		o := e
		o.SrcPort, o.DstPort = ports[0], ports[1]
		add(wire.AppendFrame(nil, &o, &send, []byte("x")))
	}

	// Undecodable frames to 4791: a reserved opcode, a pad larger than the
	// payload, an IPv4 fragment, and a frame the capture cut short.
	rsv := wire.AppendFrame(nil, &e, &send, []byte("abcd"))
	rsv[wire.EthLen+wire.IPv4Len+wire.UDPLen] = 0x1F
	add(rsv)
	pad := wire.AppendFrame(nil, &e, &send, nil)
	pad[wire.EthLen+wire.IPv4Len+wire.UDPLen+1] |= 0x30
	add(pad)
	frag := wire.AppendFrame(nil, &e, &send, []byte("abcd"))
	binary.BigEndian.PutUint16(frag[wire.EthLen+6:], 0x2000) // MF
	add(frag)
	long := wire.AppendFrame(nil, &e, &send, make([]byte, 200))
	out = append(out, capFrame{data: long[:100], length: len(long)})
	// A VLAN-tagged IPv6 frame cut inside its BTH.
	e6 := encap(true, true, 2)
	short := wire.AppendFrame(nil, &e6, &send, nil)
	out = append(out, capFrame{data: short[:wire.EthLen+wire.VLANLen+wire.IPv6Len+wire.UDPLen+6], length: len(short)})
	return out
}

func writeSynth(t testing.TB) string {
	t.Helper()
	return writePcap(t, filepath.Join(t.TempDir(), "synthetic.pcap"), synthFrames(t))
}
