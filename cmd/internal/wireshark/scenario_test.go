package wireshark

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rnic/rnic/cmd/internal/scenario"
	"github.com/rnic/rnic/transport"
)

// TestICRCFlagsWhatTheLinkCorrupted: in the capture of `rnic lab run icrc`,
// whose link flips a payload bit of one frame, the plugin flags exactly the
// frames the link says it corrupted, and every other RoCEv2 frame is good.
func TestICRCFlagsWhatTheLinkCorrupted(t *testing.T) {
	sc, err := scenario.Find("icrc")
	if err != nil {
		t.Fatal(err)
	}
	r, err := sc.Run()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "icrc.pcap")
	if err := os.WriteFile(file, r.Pcap, 0o644); err != nil {
		t.Fatal(err)
	}
	var corrupted []int
	for rec, n := range r.Notes {
		if n&transport.NoteCorrupted != 0 {
			corrupted = append(corrupted, rec)
		}
	}
	if len(corrupted) != 1 {
		t.Fatalf("the link corrupted %d frames, want 1", len(corrupted))
	}
	equalFrames(t, "rnic.icrc.bad", frameNumbers(t, tshark(t, file, "rnic.icrc.bad", "frame.number")), corrupted)
	_, frs := frames(t, file)
	good := frameNumbers(t, tshark(t, file, `rnic.icrc.status == "good"`, "frame.number"))
	if len(good)+1 != len(frs) {
		t.Errorf("%d good frames of %d, want all but the corrupted one", len(good), len(frs))
	}
}
