package layers_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/gopacket/gopacket"
	glayers "github.com/gopacket/gopacket/layers"

	rlayers "github.com/rnic/rnic/roce/layers"
	"github.com/rnic/rnic/roce/wire"
)

// fuzzSeeds returns a few real frames per opcode plus a synthetic frame of
// every opcode, so the fuzzer starts from every header sequence.
func fuzzSeeds(f *testing.F) [][]byte {
	perOp := map[wire.Opcode]int{}
	var seeds [][]byte
	for _, rf := range roceFrames(f) {
		if op := rf.wire.Packet.Opcode(); perOp[op] < 2 {
			perOp[op]++
			seeds = append(seeds, rf.bytes)
		}
	}
	for i, op := range validOpcodes() {
		c := encapCases[i%len(encapCases)]
		e := c.encap(i)
		h := testHeaders(op, i)
		seeds = append(seeds, wire.AppendFrame(nil, &e, &h, make([]byte, i%5)))
	}
	return seeds
}

// FuzzTransport feeds arbitrary transport packets (UDP payloads) to the
// RoCEv2 layers on both gopacket paths. Neither may panic (recovery is off),
// and the layers must accept exactly what roce/wire accepts, with the same
// fields.
func FuzzTransport(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		var fr wire.Frame
		if fr.Decode(b, 0) == nil {
			f.Add(fr.Packet.Bytes())
		}
	}
	var roce rlayers.DecodingLayers
	var payload gopacket.Payload
	p := gopacket.NewDecodingLayerParser(rlayers.LayerTypeBTH, append([]gopacket.DecodingLayer{&payload}, roce.Layers()...)...)
	p.IgnorePanic = true
	decoded := make([]gopacket.LayerType, 0, 8)
	f.Fuzz(func(t *testing.T, data []byte) {
		var wp wire.Packet
		werr := wp.Decode(data)
		err := p.DecodeLayers(data, &decoded)
		if (err == nil) != (werr == nil) {
			t.Fatalf("parser error %v, wire error %v", err, werr)
		}
		pkt := gopacket.NewPacket(data, rlayers.LayerTypeBTH, gopacket.DecodeOptions{SkipDecodeRecovery: true})
		if werr != nil {
			if pkt.ErrorLayer() == nil {
				t.Fatalf("NewPacket accepted what wire rejects (%v)", werr)
			}
			return
		}
		if el := pkt.ErrorLayer(); el != nil {
			t.Fatalf("NewPacket: %v", el.Error())
		}
		want := expectedRoCE(&wp)
		if !slices.Equal(decoded, want) {
			t.Fatalf("parser layers %v, want %v", decoded, want)
		}
		var types []gopacket.LayerType
		for _, l := range pkt.Layers() {
			types = append(types, l.LayerType())
			compareLayer(t, "NewPacket", l, &wp)
		}
		if !slices.Equal(types, want) {
			t.Fatalf("NewPacket layers %v, want %v", types, want)
		}
		compareLayer(t, "parser", &roce.BTH, &wp)
	})
}

// FuzzFrame feeds arbitrary Ethernet frames through gopacket with the
// RoCEv2 layers registered, and through VerifyICRC: no panic, and whenever
// roce/wire decodes the frame, gopacket finds the BTH and agrees on the ICRC.
func FuzzFrame(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pkt := gopacket.NewPacket(data, glayers.LayerTypeEthernet, gopacket.DecodeOptions{SkipDecodeRecovery: true})
		ok := rlayers.VerifyICRC(pkt)
		var fr wire.Frame
		if err := fr.Decode(data, 0); err != nil {
			var we wire.Error
			if !errors.As(err, &we) {
				t.Fatalf("wire returned a non-wire error %v", err)
			}
			return
		}
		if pkt.Layer(rlayers.LayerTypeBTH) == nil {
			t.Fatalf("wire decodes the frame but gopacket has no BTH: %v", pkt)
		}
		if ok != fr.VerifyICRC() {
			t.Fatalf("VerifyICRC %v, wire says %v", ok, fr.VerifyICRC())
		}
	})
}
