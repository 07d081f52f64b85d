package wireshark

import (
	"os"
	"path/filepath"
	"strconv"
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
	all := tshark(t, file, "", "frame.number")
	good := frameNumbers(t, tshark(t, file, `rnic.icrc.status == "good"`, "frame.number"))
	if len(good)+1 != len(all) {
		t.Errorf("%d good frames of %d, want all but the corrupted one", len(good), len(all))
	}
}

// runScenario runs a scenario and writes its capture (pcapng) to a file.
func runScenario(t *testing.T, name string) (*scenario.Run, string) {
	t.Helper()
	sc, err := scenario.Find(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sc.Run()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name+".pcapng")
	if err := os.WriteFile(file, r.Pcap, 0o644); err != nil {
		t.Fatal(err)
	}
	return r, file
}

// TestRetransmissionsFlagged: in the loss-timeout scenario the requester
// sends its 4-packet WRITE again after the timeout; the plugin flags
// exactly those 4 frames (the resends, not the first sends or the ACKs).
func TestRetransmissionsFlagged(t *testing.T) {
	_, file := runScenario(t, "loss-timeout")
	rows := tshark(t, file, "rnic.retransmission", "frame.number", "frame.time_relative", "infiniband.bth.psn")
	if len(rows) != 4 {
		t.Fatalf("%d frames flagged as retransmissions, want 4: %v", len(rows), rows)
	}
	for i, r := range rows {
		if r[1] < "0.001" || r[2] != strconv.Itoa(40960+i) {
			t.Errorf("flagged frame %v: want a resend after the 1 ms timeout with PSN %d", r, 40960+i)
		}
	}
}
