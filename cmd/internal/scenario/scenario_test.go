package scenario

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files (after review)")

// golden is what testdata/golden/NAME.txt holds of a run: the narration and
// the trace in order, then the digests of its capture and of its ladder.
func golden(t *testing.T, r *Run) string {
	var svg bytes.Buffer
	if err := r.Ladder(&svg, false); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s--- capture: %d bytes, sha256 %x\n--- ladder (SVG): %d bytes, sha256 %x\n",
		r.Log, len(r.Pcap), sha256.Sum256(r.Pcap), svg.Len(), sha256.Sum256(svg.Bytes()))
}

// TestScenariosReplay: every scenario gives the same narration, trace and
// capture on every run, and they are the reviewed ones in testdata/golden
// (go test -update rewrites them), so a handout quoting them stays true.
func TestScenariosReplay(t *testing.T) {
	for _, sc := range withForms() {
		t.Run(goldenName(sc), func(t *testing.T) {
			r1, err := sc.Run()
			if err != nil {
				t.Fatal(err)
			}
			r2, err := sc.Run()
			if err != nil {
				t.Fatal(err)
			}
			got := golden(t, r1)
			if golden(t, r2) != got {
				t.Fatalf("two runs differ:\n%s\n---\n%s", got, golden(t, r2))
			}
			path := filepath.Join("testdata", "golden", goldenName(sc)+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("the run differs from %s (go test -update after review):\n%s", path, got)
			}
		})
	}
}

// withForms is every scenario and every iWARP form of one.
func withForms() []*Scenario {
	var out []*Scenario
	for _, sc := range All() {
		out = append(out, sc)
		if sc.iwarpForm != nil {
			out = append(out, sc.iwarpForm)
		}
	}
	return out
}

// goldenName names a scenario's golden file: NAME, or NAME-iwarp for the
// iWARP form of a RoCEv2 scenario.
func goldenName(sc *Scenario) string {
	if f, _ := Find(sc.Name); f != sc {
		return sc.Name + "-iwarp"
	}
	return sc.Name
}

// shows lists, per scenario, what its run must show: the behaviour it is
// named for, in the narration, the trace or the counters.
var shows = map[string][]string{
	"rc-basics": {"RC SEND First psn=40960", "RC SEND Last psn=40962 len=952 ackreq=true",
		"send ACK credits=0 psn=40962 msn=1", "RDMA_READ SUCCESS bytes=2000", "acks_sent=2"},
	"loss-timeout": {"local ACK timeout: psn 40960 unacknowledged", "retransmit_timeouts=1", "retransmitted_pkts=4",
		"RDMA_WRITE SUCCESS"},
	"seq-nak": {"psn 40962 but expected 40961: NAK sequence error", "send NAK PSN sequence error psn=40961",
		"naks_sent=1", "retransmitted_pkts=3"},
	"dup-request":     {"duplicate RC SEND Only psn=40960: re-ACK", "duplicate_request=1", "RECV SUCCESS bytes=512"},
	"rnr":             {"send RNR NAK timer=12", "wait 640µs, then resend", "send_rnr_err=3", "RECV SUCCESS bytes=256"},
	"read-retry":      {"psn 40961 is missing (implied NAK)", "send RC RDMA READ Request psn=40961", "read_replays=1", "RDMA_READ SUCCESS bytes=3000"},
	"atomic-replay":   {"original value 100; rnic1's word is 105", "atomic_replays=1"},
	"retry-exc":       {"retry_cnt left 0", "RETRY_EXC_ERR", "WR_FLUSH_ERR", "is in state ERR", "retry_exceeded_err=1"},
	"ud":              {"send UD SEND Only", "RECV SUCCESS bytes=240"},
	"uc-gap":          {"the message in progress is lost", "second WRITE's 1000 bytes: intact", "last packet: missing", "uc_dropped_msgs=1"},
	"icrc":            {"icrc_err=1", "retransmit_timeouts=1", "RECV SUCCESS bytes=512"},
	"mpa":             {"MPA Request from 10.0.0.1:49152: rev 2 crc=true markers=true", "markers(tx)=true", "RTR (zero-length write) received", "RECV SUCCESS bytes=1500"},
	"rc-basics-iwarp": {"read_requests_rcvd=1", "read_responses_sent=2", "RECV SUCCESS bytes=3000", "RDMA_READ SUCCESS bytes=2000"},
	"terminate":       {"Terminate sent: DDP, tagged buffer error, invalid STag", "term_rcvd=1", "WR_FLUSH_ERR", "is in state ERR"},
}

// TestScenariosShowTheirBehaviour: each run shows what the scenario is
// named for, and every scenario has such a list.
func TestScenariosShowTheirBehaviour(t *testing.T) {
	for _, sc := range withForms() {
		want, ok := shows[goldenName(sc)]
		if !ok {
			t.Errorf("%s: no expectations", sc.Name)
			continue
		}
		r, err := sc.Run()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(r.Log, w) {
				t.Errorf("%s: the run does not show %q", sc.Name, w)
			}
		}
	}
	if len(shows) != len(withForms()) {
		t.Errorf("%d expectation lists for %d scenarios and forms", len(shows), len(withForms()))
	}
}
