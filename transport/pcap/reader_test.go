// Tests of the capture reader: every real capture in testdata/captures,
// every classic pcap flavour, pcapng, gzip, and clear refusals of
// non-Ethernet and non-capture input.

package pcap_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
)

// capturesDir holds the real rxe and siw captures.
const capturesDir = "../../testdata/captures"

func TestReadRealCaptures(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(capturesDir, "*.pcap"))
	paths2, _ := filepath.Glob(filepath.Join(capturesDir, "*.pcapng"))
	paths = append(paths, paths2...)
	if len(paths) == 0 {
		t.Fatalf("no captures in %s", capturesDir)
	}
	for _, p := range paths {
		frames, err := pcap.ReadFile(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if len(frames) == 0 {
			t.Errorf("%s: no frames", p)
			continue
		}
		prev := time.Time{}
		for i, f := range frames {
			if len(f.Data) < 14 {
				t.Errorf("%s frame %d: %d bytes, shorter than an Ethernet header", p, i, len(f.Data))
				break
			}
			if et := binary.BigEndian.Uint16(f.Data[12:14]); et != 0x0800 && et != 0x86dd && et != 0x0806 {
				t.Errorf("%s frame %d: EtherType %#04x", p, i, et)
				break
			}
			if f.Timestamp.Before(prev) || f.Timestamp.Year() < 2020 {
				t.Errorf("%s frame %d: timestamp %v after %v", p, i, f.Timestamp, prev)
				break
			}
			prev = f.Timestamp
		}
		t.Logf("%s: %d frames", filepath.Base(p), len(frames))
	}
}

// classicPcap builds a classic pcap by hand, in any byte order and
// resolution, with one record.
func classicPcap(order binary.ByteOrder, nanos bool, linkType uint32, ts time.Time, data []byte) []byte {
	var b bytes.Buffer
	magic := uint32(0xa1b2c3d4)
	sub := uint32(ts.Nanosecond() / 1000)
	if nanos {
		magic, sub = 0xa1b23c4d, uint32(ts.Nanosecond())
	}
	for _, v := range []any{magic, uint16(2), uint16(4), int32(0), uint32(0), uint32(65535), linkType,
		uint32(ts.Unix()), sub, uint32(len(data)), uint32(len(data))} {
		_ = binary.Write(&b, order, v)
	}
	b.Write(data)
	return b.Bytes()
}

func TestReadClassicFlavours(t *testing.T) {
	ts := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)
	data := mkFrame(5, 64)
	for _, c := range []struct {
		name  string
		order binary.ByteOrder
		nanos bool
	}{
		{"µs little-endian", binary.LittleEndian, false},
		{"µs big-endian", binary.BigEndian, false},
		{"ns little-endian", binary.LittleEndian, true},
		{"ns big-endian", binary.BigEndian, true},
	} {
		frames, err := pcap.ReadFrom(bytes.NewReader(classicPcap(c.order, c.nanos, 1, ts, data)))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		want := ts
		if !c.nanos {
			want = ts.Truncate(time.Microsecond)
		}
		if len(frames) != 1 || !bytes.Equal(frames[0].Data, data) || !frames[0].Timestamp.Equal(want) || frames[0].Truncated() {
			t.Errorf("%s: read %+v", c.name, frames)
		}
	}
}

func TestReadPcapng(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcapgo.NewNgWriter(&buf, layers.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC) // pcapng defaults to µs
	for i := range 3 {
		d := mkFrame(uint32(i), 64)
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(d), Length: len(d)}, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	frames, err := pcap.ReadFrom(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 3 {
		t.Fatalf("%d frames", len(frames))
	}
	for i, f := range frames {
		if frameID(f.Data) != uint32(i) || !f.Timestamp.Equal(ts) {
			t.Errorf("frame %d: id %d at %v", i, frameID(f.Data), f.Timestamp)
		}
	}
}

func TestReadGzipped(t *testing.T) {
	var raw bytes.Buffer
	w, _ := pcap.NewWriter(&raw)
	_ = w.WriteFrame(transport.PcapEpoch, mkFrame(3, 64))
	_ = w.Close()
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, _ = zw.Write(raw.Bytes())
	_ = zw.Close()
	frames, err := pcap.ReadFrom(&z)
	if err != nil || len(frames) != 1 || frameID(frames[0].Data) != 3 {
		t.Fatalf("gzipped capture: %v, %d frames", err, len(frames))
	}
}

func TestReadRefusals(t *testing.T) {
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sll := classicPcap(binary.LittleEndian, false, uint32(layers.LinkTypeLinuxSLL), ts, make([]byte, 40))

	var ng bytes.Buffer
	nw, _ := pcapgo.NewNgWriter(&ng, layers.LinkTypeRaw)
	_ = nw.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: 20, Length: 20}, make([]byte, 20))
	_ = nw.Flush()

	for _, c := range []struct {
		name, in, want string
	}{
		{"classic Linux SLL", string(sll), "not Ethernet"},
		{"pcapng raw IP", ng.String(), "not Ethernet"},
		{"text", "hello, this is not a capture", "not a pcap"},
		{"empty", "", "empty"},
		{"truncated record", string(classicPcap(binary.LittleEndian, false, 1, ts, mkFrame(1, 64))[:50]), "record 1"},
	} {
		_, err := pcap.ReadFrom(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	if _, err := pcap.ReadFile(filepath.Join(t.TempDir(), "missing.pcap")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}
