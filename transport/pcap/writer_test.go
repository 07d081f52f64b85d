// Tests of pcap writing: the writer's file opens with gopacket's own reader
// with exact nanosecond timestamps, a simulated run's capture shows what
// crossed the wire, the tee shows what one NIC sent and received, and write
// errors are not lost.

package pcap_test

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
)

type record struct {
	ts   time.Time
	data []byte
	ci   gopacket.CaptureInfo
}

// readWithPcapgo reads a capture with gopacket directly, independently of
// this package's reader.
func readWithPcapgo(t *testing.T, b []byte) []record {
	t.Helper()
	r, err := pcapgo.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		t.Fatalf("link type %v", r.LinkType())
	}
	if r.Resolution() != gopacket.TimestampResolutionNanosecond {
		t.Fatalf("resolution %v, want ns", r.Resolution())
	}
	var recs []record
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			return recs
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, record{ci.Timestamp, data, ci})
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	ts := []time.Time{
		transport.PcapEpoch,
		transport.PcapEpoch.Add(1),
		transport.PcapEpoch.Add(time.Second + 999_999_999),
	}
	for i, t0 := range ts {
		if err := w.WriteFrame(t0, mkFrame(uint32(i), 60+i)); err != nil {
			t.Fatal(err)
		}
	}
	big := make([]byte, pcap.Snaplen+10)
	_ = w.WriteFrame(transport.PcapEpoch.Add(2*time.Second), big)
	if w.Frames() != 4 {
		t.Errorf("Frames() = %d", w.Frames())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); !errors.Is(err, pcap.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if err := w.WriteFrame(transport.PcapEpoch, mkFrame(9, 60)); !errors.Is(err, pcap.ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
	recs := readWithPcapgo(t, buf.Bytes())
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	for i, t0 := range ts {
		if !recs[i].ts.Equal(t0) || !bytes.Equal(recs[i].data, mkFrame(uint32(i), 60+i)) {
			t.Errorf("record %d: %v %x", i, recs[i].ts, recs[i].data)
		}
	}
	if ci := recs[3].ci; ci.CaptureLength != pcap.Snaplen || ci.Length != len(big) {
		t.Errorf("oversized frame recorded as %+v", ci)
	}
}

// The capture of a simulated run: lost frames at send time, delivered copies
// at arrival time with the bytes that arrived.
func TestSimLinkPcap(t *testing.T) {
	var buf bytes.Buffer
	w, _ := pcap.NewWriter(&buf)
	clk := clock.NewVirtual()
	script := func(dir transport.Direction, i int, f []byte) transport.Verdict {
		if dir != transport.AtoB {
			return transport.Pass()
		}
		switch i {
		case 1:
			return transport.Drop()
		case 2:
			return transport.Duplicate()
		case 3:
			f[30] ^= 0x01
			return transport.Replace(f)
		}
		return transport.Pass()
	}
	a, b := transport.NewSimLink(clk, transport.SimConfig{Faults: transport.FaultConfig{Script: script}, Pcap: w})
	b.SetReceiver(func(f []byte) {
		if frameID(f) == 0 {
			_ = b.Send(mkFrame(100, 70)) // answered on arrival, at 1µs
		}
	})
	for i := range 4 {
		_ = a.Send(mkFrame(uint32(i), 64))
	}
	clk.Run(nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	corrupt := mkFrame(3, 64)
	corrupt[30] ^= 0x01
	us := time.Microsecond
	want := []struct {
		at   time.Duration
		data []byte
	}{
		{0, mkFrame(1, 64)},        // lost: recorded when sent
		{us, mkFrame(0, 64)},       // arrivals
		{us, mkFrame(2, 64)},       // duplicated:
		{us, mkFrame(2, 64)},       // twice
		{us, corrupt},              // replaced: as it arrived
		{2 * us, mkFrame(100, 70)}, // b's answer, arriving at a
	}
	recs := readWithPcapgo(t, buf.Bytes())
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i, wr := range want {
		if !recs[i].ts.Equal(transport.PcapEpoch.Add(wr.at)) || !bytes.Equal(recs[i].data, wr.data) {
			t.Errorf("record %d: %v id %d, want %v id %d", i, recs[i].ts.Sub(transport.PcapEpoch), frameID(recs[i].data), wr.at, frameID(wr.data))
		}
	}
}

func TestTee(t *testing.T) {
	var buf bytes.Buffer
	w, _ := pcap.NewWriter(&buf)
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{})
	ta := pcap.Tee(a, w, transport.VirtualTimestamps(clk))
	got := recorder(clk, ta)
	b.SetReceiver(func(f []byte) { _ = b.Send(mkFrame(frameID(f)+100, 80)) })
	_ = ta.Send(mkFrame(1, 64))
	_ = ta.Send(mkFrame(2, 64))
	clk.Run(nil)
	if err := ta.Send(nil); err == nil {
		t.Error("tee hid the endpoint's error")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(*got) != 2 {
		t.Fatalf("receiver behind the tee saw %d frames", len(*got))
	}
	recs := readWithPcapgo(t, buf.Bytes())
	wantIDs := []uint32{1, 2, 101, 102}
	wantAt := []time.Duration{0, 0, 2 * time.Microsecond, 2 * time.Microsecond}
	if len(recs) != len(wantIDs) {
		t.Fatalf("%d records, want %d", len(recs), len(wantIDs))
	}
	for i, r := range recs {
		if frameID(r.data) != wantIDs[i] || !r.ts.Equal(transport.PcapEpoch.Add(wantAt[i])) {
			t.Errorf("record %d: id %d at %v", i, frameID(r.data), r.ts.Sub(transport.PcapEpoch))
		}
	}
	if err := ta.Close(); err != nil {
		t.Fatal(err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterErrorsAreSticky(t *testing.T) {
	w, err := pcap.NewWriter(failWriter{})
	if err != nil {
		t.Fatal(err) // buffered: the header has not hit the writer yet
	}
	_ = w.WriteFrame(transport.PcapEpoch, mkFrame(1, 64))
	if err := w.Flush(); err == nil {
		t.Fatal("Flush hid the write error")
	}
	if err := w.WriteFrame(transport.PcapEpoch, mkFrame(2, 64)); err == nil {
		t.Error("write after a failure succeeded")
	}
	if err := w.Close(); err == nil || err.Error() != "disk full" {
		t.Errorf("Close = %v, want the first error", err)
	}
}

func TestCreatePcap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.pcap")
	w, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	_ = w.WriteFrame(transport.PcapEpoch.Add(5), mkFrame(7, 64))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	frames, err := pcap.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 1 || frameID(frames[0].Data) != 7 || !frames[0].Timestamp.Equal(transport.PcapEpoch.Add(5)) {
		t.Errorf("read back %+v", frames)
	}
}
