package scenario

import (
	"bytes"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// verdictCounters are the counters that say which protocol events a run
// showed: a NAK, an RNR NAK, a timeout, a duplicate, a replay, a
// retry-exceeded error, an ICRC drop, a UC message dropped.
var verdictCounters = []string{"retransmit_timeouts", "rcvd_seq_err", "naks_sent", "rcvd_rnr_err", "send_rnr_err",
	"duplicate_request", "atomic_replays", "read_replays", "implied_nak", "retry_exceeded_err", "icrc_err",
	"uc_dropped_msgs"}

// neverSpurious are verdict counters a slow machine cannot move on its
// own: a late ACK can cause a timeout and a duplicate, never these.
var neverSpurious = []string{"rcvd_seq_err", "naks_sent", "rcvd_rnr_err", "send_rnr_err", "atomic_replays",
	"read_replays", "retry_exceeded_err", "icrc_err", "uc_dropped_msgs"}

// TestTAPFormVerdicts runs every RoCEv2 scenario on two TAP NICs (root)
// and checks it shows what the simulated form shows: the same posts,
// completions (statuses, byte counts), QP states and data checks in the
// same order; the same protocol events in the counters; the same kinds of
// notes on the frames the script touched; a ladder with both NICs' lifelines.
func TestTAPFormVerdicts(t *testing.T) {
	if err := tapUsable(); err != nil {
		t.Skipf("%v (CI runs as root)", err)
	}
	for _, sc := range roceScenarios {
		t.Run(sc.Name, func(t *testing.T) {
			sim, err := sc.Run()
			if err != nil {
				t.Fatal(err)
			}
			onTAP, err := sc.RunTAP()
			if err != nil {
				t.Fatal(err)
			}
			if got, want := narration(onTAP.Output), narration(sim.Output); !slices.Equal(got, want) {
				t.Errorf("the TAP form's steps differ:\n%s\n--- simulated:\n%s\n--- TAP output:\n%s",
					strings.Join(got, "\n"), strings.Join(want, "\n"), onTAP.Output)
			}
			checkVerdicts(t, counterLines(sim.Output), counterLines(onTAP.Output), onTAP.Output)
			if got, want := pcapNotes(onTAP.Pcap), pcapNotes(sim.Pcap); !slices.Equal(got, want) {
				t.Errorf("the TAP capture's notes are %q, the simulated one's %q", got, want)
			}
			var svg bytes.Buffer
			if err := onTAP.Ladder(&svg, false); err != nil {
				t.Fatal(err)
			}
			for _, addr := range []string{"10.0.0.1", "10.0.0.2"} {
				if !strings.Contains(svg.String(), addr) {
					t.Errorf("the TAP form's ladder has no lifeline for %s", addr)
				}
			}
		})
	}
}

// checkVerdicts: every protocol event the simulated run counted, the TAP
// run counted too; those that cannot be spurious it did not count unless
// the simulated run did.
func checkVerdicts(t *testing.T, sim, onTAP map[string]uint64, out string) {
	t.Helper()
	for _, k := range verdictCounters {
		if sim[k] > 0 && onTAP[k] == 0 {
			t.Errorf("%s moved in the simulated form (%d), not on TAP:\n%s", k, sim[k], out)
		}
	}
	for _, k := range neverSpurious {
		if sim[k] == 0 && onTAP[k] > 0 {
			t.Errorf("%s moved on TAP (%d), not in the simulated form:\n%s", k, onTAP[k], out)
		}
	}
}

// TestTAPFormRefusesIWARP: the iWARP scenarios say they have no TAP form.
func TestTAPFormRefusesIWARP(t *testing.T) {
	for _, sc := range iwarpScenarios {
		if _, err := sc.RunTAP(); err == nil || errors.Is(err, ErrNoTAP) || !strings.Contains(err.Error(), "no TAP form") {
			t.Errorf("%s on TAP: %v, want a refusal naming the TAP form", sc.Name, err)
		}
	}
}

var (
	stepTime = regexp.MustCompile(`^ *[0-9.]+(ns|µs|ms|s)  `)
	qpn      = regexp.MustCompile(`qp 0x[0-9a-f]+`)
)

// narration is a run's narration without times, QPNs and counters: the
// steps and what each came to.
func narration(out string) []string {
	var steps []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, "counters ") {
			continue
		}
		steps = append(steps, qpn.ReplaceAllString(stepTime.ReplaceAllString(l, ""), "qp"))
	}
	return steps
}

// counterLines sums the verdict counters of both NICs' "counters" lines.
func counterLines(out string) map[string]uint64 {
	sum := map[string]uint64{}
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "counters ") {
			continue
		}
		_, kvs, _ := strings.Cut(l, ": ")
		for _, kv := range strings.Fields(kvs) {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseUint(v, 10, 64)
			sum[k] += n
		}
	}
	return sum
}

var noteText = regexp.MustCompile(`rnic: [a-z,]+`)

// pcapNotes are the kinds of the link's notes in a pcapng capture
// ("rnic: lost"), each once: how many frames a go-back-N resend loses
// again depends on when the ACKs come, not what is shown.
func pcapNotes(capture []byte) []string {
	var notes []string
	for _, m := range noteText.FindAll(capture, -1) {
		notes = append(notes, string(m))
	}
	slices.Sort(notes)
	return slices.Compact(notes)
}
