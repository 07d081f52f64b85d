package wire

import (
	"bytes"
	"path/filepath"
	"testing"
)

// seedFrames adds one frame per valid opcode, the ICRC vectors, and every
// RoCEv2 frame of the real captures kept in testdata/captures.
func seedFrames(f *testing.F) {
	for _, v := range icrcVectors {
		f.Add(mustHex(f, v.hex))
	}
	files, _ := filepath.Glob("../../testdata/captures/rxe-*.pcap")
	for _, path := range files {
		for _, b := range readFrames(f, path) {
			if isRoCEUDP(b) {
				f.Add(b)
			}
		}
	}
	for i, op := range validOpcodes() {
		e := testEncap(i%2 == 1, i%3 == 0)
		h := allHeaders(op)
		f.Add(AppendFrame(nil, &e, &h, []byte("xyz")[:i%4]))
	}
}

// FuzzFrameDecode: no input makes the decoder panic or read out of bounds;
// whatever decodes can be read whole, re-encoded, and decodes again to the
// same headers and payload.
func FuzzFrameDecode(f *testing.F) {
	seedFrames(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr Frame
		if err := fr.Decode(b, 0); err != nil {
			if _, ok := err.(Error); !ok {
				t.Fatalf("non-code error %T", err)
			}
			return
		}
		fr.VerifyICRC()
		h := fr.Packet.Headers()
		p := fr.Packet.Payload()
		_ = fr.Packet.PadBytes()
		e := fr.Encap()
		out := AppendFrame(nil, &e, &h, p)
		var g Frame
		if err := g.Decode(out, 0); err != nil {
			t.Fatalf("re-encoded frame does not decode: %v", err)
		}
		if !g.VerifyICRC() {
			t.Fatal("re-encoded frame has a bad ICRC")
		}
		h2 := g.Packet.Headers()
		h.BTH.PadCnt = PadFor(len(p))
		h.BTH.TVer = 0
		if h2 != h || !bytes.Equal(g.Packet.Payload(), p) {
			t.Fatalf("round trip changed headers\n%+v\n%+v", h, h2)
		}
	})
}

// FuzzPacketDecode covers the transport-packet decoder alone (the embedded
// mode receives UDP payloads without L2/L3 headers).
func FuzzPacketDecode(f *testing.F) {
	for _, op := range validOpcodes() {
		h := allHeaders(op)
		f.Add(AppendPacket(nil, &h, []byte("abcde")))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Packet
		if p.Decode(b) != nil {
			return
		}
		h := p.Headers()
		if got := PacketLen(p.Opcode(), len(p.Payload())); got != len(b) {
			t.Fatalf("decoded length %d but packet is %d bytes", got, len(b))
		}
		out := AppendPacket(nil, &h, p.Payload())
		var q Packet
		if err := q.Decode(out); err != nil {
			t.Fatalf("re-encoded packet does not decode: %v", err)
		}
	})
}
