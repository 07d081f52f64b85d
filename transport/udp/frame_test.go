// Tests of the pure frame code (parse.go, header.go, mac.go): no sockets,
// so they run on every platform.

package udp

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"

	"github.com/rnic/rnic/roce/wire"
)

var (
	local4 = netip.MustParseAddr("127.0.0.2")
	peer4  = netip.MustParseAddr("127.0.0.3")
	local6 = netip.MustParseAddr("fd00::2")
	peer6  = netip.MustParseAddr("fd00::3")
)

// buildFrame builds a RoCEv2 frame as the engine would.
func buildFrame(src, dst netip.Addr, tos, ttl uint8, flow uint32, sport, dport uint16, payload []byte) []byte {
	e := wire.Encap{
		SrcMAC: SyntheticMAC(src), DstMAC: SyntheticMAC(dst), Src: src, Dst: dst,
		TOS: tos, TTL: ttl, FlowLabel: flow, DF: true, SrcPort: sport, DstPort: dport,
	}
	h := wire.Headers{BTH: wire.BTHFields{Opcode: wire.RCWriteOnly, PKey: 0xFFFF, DestQP: 0x123456, PSN: 77},
		RETH: wire.RETHFields{VA: 0x1000, RKey: 0xABCD, Length: uint32(len(payload))}}
	return wire.AppendFrame(nil, &e, &h, payload)
}

// TestSynthesizeMatchesEncoder checks that the receive side rebuilds, from
// what a socket reports, exactly the frame roce/wire encodes: headers,
// checksums and all.
func TestSynthesizeMatchesEncoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		v6 := i%2 == 1
		src, dst := peer4, local4
		if v6 {
			src, dst = peer6, local6
		}
		a := arrival{
			v6: v6, srcPort: uint16(rng.Uint32()) | 1, dstPort: uint16(rng.Uint32()) | 1,
			tos: uint8(rng.Uint32()), ttl: uint8(rng.Uint32()) | 1,
		}
		copy(a.src[:], src.AsSlice())
		copy(a.dst[:], dst.AsSlice())
		if v6 {
			a.flowLabel = rng.Uint32() & 0xFFFFF
		}
		payload := make([]byte, rng.IntN(3000))
		for j := range payload {
			payload[j] = byte(rng.Uint32())
		}
		want := buildFrame(src, dst, a.tos, a.ttl, a.flowLabel, a.srcPort, a.dstPort, payload)
		pkt := want[a.headerLen():]
		slot := make([]byte, hdrRoom+len(pkt))
		copy(slot[hdrRoom:], pkt)
		got := synthesize(slot, len(pkt), &a, SyntheticMAC(dst), SyntheticMAC(src))
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d (v6 %v): synthesized\n% x\nencoded\n% x", i, v6, got[:64], want[:64])
		}
	}
}

// TestSum16 checks the checksum accumulator against the plain RFC 1071 loop
// at every length and alignment that matters.
func TestSum16(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 70 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if n == 20 {
			for i := range b {
				b[i] = 0xFF
			}
		}
		var ref uint32
		for i := 0; i+1 < n; i += 2 {
			ref += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if n%2 == 1 {
			ref += uint32(b[n-1]) << 8
		}
		if got, want := fold(sum16(0, b)), fold(ref); got != want {
			t.Errorf("length %d: %#04x, want %#04x", n, got, want)
		}
	}
}

func TestParseOutgoing(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		src, dst := local4, peer4
		if v6 {
			src, dst = local6, peer6
		}
		payload := []byte("payload")
		f := buildFrame(src, dst, 0xB8, 3, 0x12345, 0xC001, 4791, payload)
		f = append(f, 0, 0, 0, 0) // Ethernet padding is ignored
		o, err := parseOutgoing(f, src)
		if err != nil {
			t.Fatal(err)
		}
		if o.v6 != v6 || o.srcPort != 0xC001 || o.dstPort != 4791 || o.tos != 0xB8 || o.ttl != 3 {
			t.Errorf("parsed %+v", o)
		}
		if addrOf(v6, &o.dst) != dst {
			t.Errorf("destination %v", addrOf(v6, &o.dst))
		}
		if v6 && o.flowLabel != 0x12345 {
			t.Errorf("flow label %#x", o.flowLabel)
		}
		var wf wire.Frame
		if err := wf.Decode(f, 4791); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(o.payload, wf.Packet.Bytes()) {
			t.Errorf("payload is not the transport packet")
		}
		if _, err := parseOutgoing(f, dst); err == nil {
			t.Errorf("frame from another address accepted")
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		_, _ = parseOutgoing(buildFrameOnce, local4)
	}); n != 0 {
		t.Errorf("parseOutgoing allocates %v times", n)
	}
}

var buildFrameOnce = buildFrame(local4, peer4, 0, 64, 0, 0xC000, 4791, make([]byte, 256))

func TestSyntheticMAC(t *testing.T) {
	if got := SyntheticMAC(netip.MustParseAddr("127.0.0.2")); got != [6]byte{2, 0, 0x7f, 0, 0, 2} {
		t.Errorf("127.0.0.2 -> % x", got)
	}
	if SyntheticMAC(netip.MustParseAddr("::ffff:10.1.2.3")) != SyntheticMAC(netip.MustParseAddr("10.1.2.3")) {
		t.Error("an IPv4-mapped address differs from its IPv4 address")
	}
	seen := map[[6]byte]string{}
	for _, s := range []string{"::1", "fe80::1", "2001:db8::1", "fd00::2", "fd00::3", "127.0.0.1", "0.0.0.1"} {
		m := SyntheticMAC(netip.MustParseAddr(s))
		if m[0]&1 != 0 || m[0]&2 == 0 {
			t.Errorf("%s -> % x is not locally administered unicast", s, m)
		}
		if prev, dup := seen[m]; dup {
			t.Errorf("%s and %s share % x", s, prev, m)
		}
		seen[m] = s
	}
	if m := SyntheticMAC(netip.MustParseAddr("::1")); [4]byte(m[2:]) != [4]byte{0, 0, 0, 1} {
		t.Errorf("::1 -> % x, want the tail 00:00:00:01", m)
	}
}

// FuzzParseOutgoing feeds arbitrary frames to the send-side parser: it must
// never panic, and whatever it accepts must survive a round trip through
// the receive side's synthesis unchanged.
func FuzzParseOutgoing(f *testing.F) {
	f.Add(buildFrame(local4, peer4, 0, 64, 0, 0xC000, 4791, []byte("x")))
	f.Add(buildFrame(local6, peer6, 0xB8, 1, 5, 0xC001, 4791, nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, local := range []netip.Addr{local4, local6} {
			o, err := parseOutgoing(frame, local)
			if err != nil {
				continue
			}
			a := arrival{v6: o.v6, srcPort: o.srcPort, dstPort: o.dstPort, tos: o.tos, ttl: o.ttl, flowLabel: o.flowLabel, dst: o.dst}
			copy(a.src[:], local.AsSlice())
			slot := make([]byte, hdrRoom+len(o.payload))
			copy(slot[hdrRoom:], o.payload)
			back, err := parseOutgoing(synthesize(slot, len(o.payload), &a, [6]byte{}, [6]byte{}), local)
			if err != nil {
				t.Fatalf("synthesized frame refused: %v", err)
			}
			if !bytes.Equal(back.payload, o.payload) {
				t.Fatal("round trip changed the payload")
			}
			back.payload, o.payload = nil, nil
			if !reflect.DeepEqual(back, o) {
				t.Fatalf("round trip changed %+v into %+v", o, back)
			}
		}
	})
}
