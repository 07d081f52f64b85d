package transport_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
)

// TestSimLinkNotes checks that the link tells which capture record it
// lost, duplicated, delayed or corrupted: the records named are the frames
// the faults hit, and no other record gets a note.
func TestSimLinkNotes(t *testing.T) {
	clk := clock.NewVirtual()
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	script := func(dir transport.Direction, index int, frame []byte) transport.Verdict {
		if dir != transport.AtoB {
			return transport.Pass()
		}
		switch index {
		case 0:
			return transport.Drop()
		case 1:
			return transport.Duplicate()
		case 2:
			return transport.Delay(5 * time.Microsecond)
		}
		return transport.Pass()
	}
	notes := map[int]transport.LinkNote{}
	a, b := transport.NewSimLink(clk, transport.SimConfig{Pcap: w,
		Faults: transport.FaultConfig{Script: script, BtoA: transport.Faults{Corrupt: 1}},
		Notes:  func(record int, n transport.LinkNote) { notes[record] |= n }})
	a.SetReceiver(func([]byte) {})
	b.SetReceiver(func([]byte) {})
	for i := range 4 {
		if err := a.Send(mkFrame(uint32(i), 64)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Send(mkFrame(4, 64)); err != nil {
		t.Fatal(err)
	}
	clk.Run(nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	frames, err := pcap.ReadFrom(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// What each frame id must be noted with: 0 lost (recorded when sent),
	// the second copy of 1 duplicated, 2 delayed, 4 corrupted (its id
	// may be the flipped bit, so it is found by elimination).
	want := map[uint32]transport.LinkNote{0: transport.NoteLost, 2: transport.NoteHeld}
	seen1 := 0
	for i, f := range frames {
		rec, id := i+1, frameID(f.Data)
		got := notes[rec]
		switch {
		case id == 1:
			seen1++
			if w := map[int]transport.LinkNote{1: 0, 2: transport.NoteDuplicate}[seen1]; got != w {
				t.Errorf("record %d (copy %d of frame 1): notes %v, want %v", rec, seen1, got, w)
			}
		case id == 3:
			if got != 0 {
				t.Errorf("record %d (frame 3, untouched): notes %v", rec, got)
			}
		case want[id] != 0:
			if got != want[id] {
				t.Errorf("record %d (frame %d): notes %v, want %v", rec, id, got, want[id])
			}
		default: // frame 4, corrupted anywhere
			if got != transport.NoteCorrupted {
				t.Errorf("record %d (frame 4): notes %v, want corrupted", rec, got)
			}
		}
	}
	if len(frames) != 6 || len(notes) != 4 {
		t.Errorf("%d records, %d noted; want 6 records, 4 noted (%v)", len(frames), len(notes), notes)
	}
}
