package layers_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gopacket/gopacket"
	glayers "github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	rlayers "github.com/rnic/rnic/roce/layers"
	"github.com/rnic/rnic/roce/wire"
)

// captureFiles returns the real rxe captures in testdata/captures.
func captureFiles(t testing.TB) []string {
	t.Helper()
	files, _ := filepath.Glob("../../testdata/captures/rxe-*.pcap")
	if len(files) == 0 {
		t.Fatal("no rxe captures in testdata/captures")
	}
	return files
}

func readFrames(t testing.TB, path string) [][]byte {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	r, err := pcapgo.NewReader(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out [][]byte
	for {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, data)
	}
}

// roceFrames returns every frame of the real captures that roce/wire
// decodes, with its decode.
type roceFrame struct {
	name  string
	bytes []byte
	wire  wire.Frame
}

func roceFrames(t testing.TB) []roceFrame {
	t.Helper()
	var out []roceFrame
	for _, path := range captureFiles(t) {
		for i, b := range readFrames(t, path) {
			var f wire.Frame
			if f.Decode(b, 0) != nil {
				continue
			}
			out = append(out, roceFrame{name: filepath.Base(path) + "#" + strconv.Itoa(i+1), bytes: b, wire: f})
		}
	}
	if len(out) == 0 {
		t.Fatal("no RoCEv2 frames in the captures")
	}
	return out
}

// expectedTypes is the layer sequence gopacket should report for f.
func expectedTypes(f *wire.Frame) []gopacket.LayerType {
	return append(expectedL2L4(f), expectedRoCE(&f.Packet)...)
}

func expectedL2L4(f *wire.Frame) []gopacket.LayerType {
	ts := []gopacket.LayerType{glayers.LayerTypeEthernet}
	if f.VLAN {
		ts = append(ts, glayers.LayerTypeDot1Q)
	}
	if f.IPv6 {
		ts = append(ts, glayers.LayerTypeIPv6)
	} else {
		ts = append(ts, glayers.LayerTypeIPv4)
	}
	return append(ts, glayers.LayerTypeUDP)
}

// expectedRoCE is the layer sequence from the BTH on.
func expectedRoCE(p *wire.Packet) []gopacket.LayerType {
	ts := []gopacket.LayerType{rlayers.LayerTypeBTH}
	for _, h := range p.Info().Hdrs {
		ts = append(ts, hdrType(h))
	}
	if len(p.Payload()) > 0 {
		ts = append(ts, gopacket.LayerTypePayload)
	}
	return ts
}

func hdrType(h wire.Hdr) gopacket.LayerType {
	return map[wire.Hdr]gopacket.LayerType{
		wire.HdrRETH: rlayers.LayerTypeRETH, wire.HdrAETH: rlayers.LayerTypeAETH,
		wire.HdrAtomicETH: rlayers.LayerTypeAtomicETH, wire.HdrAtomicAckETH: rlayers.LayerTypeAtomicAckETH,
		wire.HdrImmDt: rlayers.LayerTypeImmDt, wire.HdrIETH: rlayers.LayerTypeIETH,
		wire.HdrDETH: rlayers.LayerTypeDETH, wire.HdrFETH: rlayers.LayerTypeFETH,
		wire.HdrCNPPad: rlayers.LayerTypeCNP,
	}[h]
}

// compareLayer checks one RoCEv2 layer's fields against roce/wire's decode.
func compareLayer(t testing.TB, name string, l gopacket.Layer, p *wire.Packet) {
	t.Helper()
	h := p.Headers()
	pkt := p.Bytes()
	switch l := l.(type) {
	case *rlayers.BTH:
		if l.BTHFields != h.BTH {
			t.Errorf("%s: BTH %+v, wire %+v", name, l.BTHFields, h.BTH)
		}
		if l.ICRC != p.WireICRC() {
			t.Errorf("%s: ICRC %08x, wire %08x", name, l.ICRC, p.WireICRC())
		}
		want := pkt[wire.BTHLen : len(pkt)-wire.ICRCLen-len(p.PadBytes())]
		if !bytes.Equal(l.LayerContents(), pkt[:wire.BTHLen]) || !bytes.Equal(l.LayerPayload(), want) {
			t.Errorf("%s: BTH contents/payload split wrong", name)
		}
	case *rlayers.RETH:
		if l.RETHFields != h.RETH {
			t.Errorf("%s: RETH %+v, wire %+v", name, l.RETHFields, h.RETH)
		}
	case *rlayers.AETH:
		if l.AETHFields != h.AETH {
			t.Errorf("%s: AETH %+v, wire %+v", name, l.AETHFields, h.AETH)
		}
	case *rlayers.AtomicETH:
		if l.AtomicETHFields != h.AtomicETH {
			t.Errorf("%s: AtomicETH %+v, wire %+v", name, l.AtomicETHFields, h.AtomicETH)
		}
	case *rlayers.AtomicAckETH:
		if l.OrigData != h.AtomicAck {
			t.Errorf("%s: AtomicAckETH %x, wire %x", name, l.OrigData, h.AtomicAck)
		}
	case *rlayers.ImmDt:
		if l.Imm != h.Imm {
			t.Errorf("%s: ImmDt %x, wire %x", name, l.Imm, h.Imm)
		}
	case *rlayers.IETH:
		if l.RKey != h.IETH {
			t.Errorf("%s: IETH %x, wire %x", name, l.RKey, h.IETH)
		}
	case *rlayers.DETH:
		if l.DETHFields != h.DETH {
			t.Errorf("%s: DETH %+v, wire %+v", name, l.DETHFields, h.DETH)
		}
	case *rlayers.FETH:
		if l.Word != h.FETH {
			t.Errorf("%s: FETH %x, wire %x", name, l.Word, h.FETH)
		}
	case *rlayers.CNP:
		if !bytes.Equal(l.Reserved[:], pkt[wire.BTHLen:wire.BTHLen+16]) {
			t.Errorf("%s: CNP reserved bytes differ", name)
		}
	case *gopacket.Payload:
		if !bytes.Equal(*l, p.Payload()) {
			t.Errorf("%s: payload %d bytes, wire %d", name, len(*l), len(p.Payload()))
		}
	}
}
