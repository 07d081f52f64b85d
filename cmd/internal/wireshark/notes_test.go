package wireshark

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rnic/rnic/cmd/internal/sim"
	"github.com/rnic/rnic/transport"
)

// TestLinkNotesBecomeFields: a simulated run with every kind of fault,
// captured as pcapng, carries the link's notes as packet comments, and the
// plugin turns them into rnic.lost, rnic.duplicate, rnic.corrupted and
// rnic.delayed on exactly the frames the link reported to the program.
func TestLinkNotesBecomeFields(t *testing.T) {
	var buf bytes.Buffer
	notes := map[int]transport.LinkNote{}
	cfg := sim.Config{Ops: 300, QPs: 2, Loss: 0.03, Dup: 0.03, Corrupt: 0.02, Reorder: 0.03, Seed: 11, MaxMsg: 3000,
		Pcap: &buf, PcapNG: true, LinkNotes: func(rec int, n transport.LinkNote) { notes[rec] |= n }}
	if _, err := sim.Run(cfg); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "sim.pcapng")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		field string
		note  transport.LinkNote
	}{{"rnic.lost", transport.NoteLost}, {"rnic.duplicate", transport.NoteDuplicate},
		{"rnic.corrupted", transport.NoteCorrupted}, {"rnic.delayed", transport.NoteHeld}} {
		var want []int
		for rec, n := range notes {
			if n&k.note != 0 {
				want = append(want, rec)
			}
		}
		if len(want) == 0 {
			t.Fatalf("the run has no frame noted %s: pick another seed", k.field)
		}
		equalFrames(t, k.field, frameNumbers(t, tshark(t, file, k.field, "frame.number")), want)
	}
}
