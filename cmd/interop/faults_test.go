package main

import (
	"bytes"
	"fmt"
	"net/netip"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/pcap"
)

// TestFaultRows: every fault has its rows against rxe and siw in both
// roles, --only netem selects exactly them, the smoke has none, and
// only they run rnic with --trace (their timeouts come from it).
func TestFaultRows(t *testing.T) {
	rows := Rows(Pairings)
	var faulty []string
	for _, r := range rows {
		args := strings.Join(r.RnicArgs("x.pcap"), " ")
		if r.Fault == nil {
			if strings.Contains(args, "--trace") {
				t.Errorf("%s: a clean row traces", r.Label())
			}
			continue
		}
		faulty = append(faulty, r.Label())
		kind := "netem "
		if r.RnicFaults {
			kind = "netem+rnic "
		}
		if !strings.Contains(r.Label(), kind+r.Fault.Name) {
			t.Errorf("%s: the label does not name its fault", r.Label())
		}
		if !strings.Contains(args, "--trace") {
			t.Errorf("%s: rnic runs without --trace: %s", r.Label(), args)
		}
		if spec := "--faults " + r.Fault.Rnic + ",seed=31"; r.RnicFaults != strings.Contains(args, spec) || strings.Contains(args, "--faults") != r.RnicFaults {
			t.Errorf("%s: rnic's faults (%v) but %s", r.Label(), r.RnicFaults, args)
		}
	}
	want := 0
	for _, f := range Faults {
		want += 12
		if f.Bulk {
			want -= 6 // no ib_read_bw, no rping
		}
		if f.Rnic != "" {
			want += 6 // both ways: pingpong, ib_read_bw, siw rping
		}
	}
	if len(faulty) != want {
		t.Errorf("%d fault rows, want %d", len(faulty), want)
	}
	sel, err := Select(rows, "netem", false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range sel {
		got = append(got, r.Label())
	}
	if !slices.Equal(got, faulty) {
		t.Errorf("--only netem selected %d rows, not the %d fault rows", len(got), len(faulty))
	}
	smoke, _ := Select(rows, "", true)
	for _, r := range smoke {
		if r.Fault != nil {
			t.Errorf("the smoke runs fault row %q", r.Label())
		}
	}
	for _, c := range []struct{ label, guest, rnic string }{
		{"rxe netem loss 5% rc pingpong 4096 --chk / rnic server", "ibv_rc_pingpong -d rxe0 -c -g 1 -n 100 -s 4096 10.77.0.61",
			"pingpong --netns rnlab --bridge br0 --tap tap-i1 --ip 10.77.0.61/24 --pcap x.pcap --trace --chk -g 1 -n 100 -s 4096"},
		{"siw netem corrupt 0.1% ib_write_bw 65536 / rnic client", "ib_write_bw -d siw0 -R -F -s 65536 -n 20",
			"perf --netns rnlab --bridge br0 --tap tap-i2 --ip 10.77.0.62/24 --pcap x.pcap --trace --iwarp --op write --mode bw -R -F -s 65536 -n 20 10.77.0.22"},
		{"rxe netem reorder 25% rping -V / rnic client", "rping -s -a 10.77.0.21 -v -V -C 20",
			"rping --netns rnlab --bridge br0 --tap tap-i1 --ip 10.77.0.61/24 --pcap x.pcap --trace -c -a 10.77.0.21 -C 20 -v -V"},
	} {
		i := slices.IndexFunc(rows, func(r Row) bool { return r.Label() == c.label })
		if i < 0 {
			t.Errorf("no row %q", c.label)
			continue
		}
		if got := rows[i].GuestCommand(); got != c.guest {
			t.Errorf("%s guest:\n got %s\nwant %s", c.label, got, c.guest)
		}
		if got := strings.Join(rows[i].RnicArgs("x.pcap"), " "); got != c.rnic {
			t.Errorf("%s rnic:\n got %s\nwant %s", c.label, got, c.rnic)
		}
	}
}

// TestCMListenScript: the guest's readiness check for an rdma_cm
// server on rxe finds the LISTEN id of its port (a line as the guest's
// iproute2 prints it), and only that port's.
func TestCMListenScript(t *testing.T) {
	line := "link rxe0/1 cm-idn 20 state LISTEN ps TCP pid 3359 comm rping src-addr 10.77.0.21:7174 dst-addr 0.0.0.0:0 "
	fake := "rdma() { echo '" + line + "'; }; "
	if err := exec.Command("bash", "-c", fake+cmListenScript(rpingPort, 1)).Run(); err != nil {
		t.Errorf("port 7174 listening: %v", err)
	}
	if err := exec.Command("bash", "-c", fake+cmListenScript(71, 1)).Run(); err == nil {
		t.Error("port 71 is not listening, yet the script says so")
	}
	for _, r := range Rows(Pairings) {
		g := Guests[r.Guest]
		cm := strings.Contains(r.GuestServer, "rping") || strings.Contains(r.GuestServer, " -R ")
		if r.Tests || r.Verbs || g.IWARP || !cm {
			continue
		}
		if r.CMPort == 0 || r.ListenPort != 0 {
			t.Errorf("%s: an rdma_cm server on rxe without CMPort (%d, ListenPort %d)", r.Label(), r.CMPort, r.ListenPort)
		}
	}
}

// TestNetemScripts: the guest sets netem with replace (a qdisc left by
// an interrupted row does not make it fail) and checks it took; the
// clearing script removes the root qdisc whatever it is.
func TestNetemScripts(t *testing.T) {
	for _, f := range Faults {
		s := netemScript(f)
		if !strings.Contains(s, "tc qdisc replace dev eth0 root netem "+f.Netem+" &&") {
			t.Errorf("%s: %s", f.Name, s)
		}
	}
	if !strings.HasPrefix(clearNetemScript, "tc qdisc del dev eth0 root") {
		t.Errorf("clear: %s", clearNetemScript)
	}
}

// TestCountWire: a golden rxe capture (10.77.0.12 writing to
// 10.77.0.11) split by sender; a request sent twice is the sender's
// retransmission, a damaged frame its bad frame, an ACK rewritten as a
// NAK (ICRC resealed) its NAK, and nothing moves to the other side.
func TestCountWire(t *testing.T) {
	frames := golden(t, "rxe-write-bw-4096.pcap")
	a, b := netip.MustParseAddr("10.77.0.11"), netip.MustParseAddr("10.77.0.12")
	clean := CountWire(frames, b, a)
	if clean.Rnic.Frames == 0 || clean.Peer.Frames == 0 || clean.Rnic.Retrans+clean.Peer.Retrans+clean.Rnic.Bad+clean.Peer.Bad+clean.Rnic.NAKs+clean.Peer.NAKs != 0 {
		t.Fatalf("golden: %+v", clean)
	}
	req, ack := -1, -1
	var f wire.Frame
	for i, fr := range frames {
		if f.Decode(fr.Data, 0) != nil {
			continue
		}
		switch {
		case f.Packet.Info().Response && ack < 0:
			ack = i
		case !f.Packet.Info().Response && req < 0 && f.Packet.Opcode() == wire.RCWriteMiddle:
			req = i
		}
	}
	if req < 0 || ack < 0 {
		t.Fatalf("no WRITE Middle (%d) or ACK (%d)", req, ack)
	}
	damaged := slices.Clone(frames[req].Data)
	damaged[len(damaged)-10] ^= 0x10 // a payload bit: the ICRC no longer matches
	nak := slices.Clone(frames[ack].Data)
	if err := f.Decode(nak, 0); err != nil {
		t.Fatal(err)
	}
	f.Packet.AETH().Encode(wire.Syndrome(byte(wire.AckTypeNAK)<<5|byte(wire.NAKPSNSeqError)), f.Packet.AETH().MSN())
	f.Seal()
	more := slices.Clone(frames)
	more = append(more, frames[req], pcap.Frame{Data: damaged}, pcap.Frame{Data: nak})
	got := CountWire(more, b, a)
	want := clean
	want.Rnic.Frames += 2
	want.Rnic.Retrans++
	want.Rnic.Bad++
	want.Peer.Frames++
	want.Peer.NAKs++
	if got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if s := got.Rnic.String(); s != fmt.Sprintf("%d/1/0/1", want.Rnic.Frames) {
		t.Errorf("String: %s", s)
	}
}

// TestRnicTrace: rnic's trace lines (as --trace prints them) are
// counted by kind; a NAK rnic sends is not one it received.
func TestRnicTrace(t *testing.T) {
	log := `rnic0  86.037842ms qp=0x8a810d comp  local ACK timeout: psn 6801704 unacknowledged (retry_cnt left 7)
rnic0 333.208112ms qp=0x8a810d comp  local ACK timeout: psn 6801928 unacknowledged (retry_cnt left 7)
rnic0 1.582163949s qp=0x00423a resp  send NAK PSN sequence error psn=10308336 msn=53
rnic0 1.6s qp=0x00423a comp  NAK PSN sequence error: responder expects 10308400, resend from there
rnic1  38.296889ms qp=0x543ba6 comp  RC RDMA READ Response Middle psn=10584666 but psn 10584665 is missing (implied NAK): resend the READ from there
rnic0 2s qp=0x1 comp  RNR NAK psn=5: wait 10ms, then resend (rnr_retry left 6)
rnic0 3s qp=0x1 comp  retry_cnt exhausted at psn 9: RETRY_EXC_ERR
`
	got := RnicTrace(log)
	want := map[string]int{"timeouts": 2, "seq_naks": 1, "implied_naks": 1, "rnr_naks": 1, "retry_exceeded": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (%v)", k, got[k], v, got)
		}
	}
	if s := traceString(got); s != "seq_naks=1 rnr_naks=1 implied_naks=1 retry_exceeded=1" {
		t.Errorf("traceString: %q", s)
	}
}

// TestCounterDelta: rxe's hw_counters and nstat's lines parse alike;
// only the reported counters that moved are shown.
func TestCounterDelta(t *testing.T) {
	before := ParseCounters("completer_retry_err 4\nrcvd_seq_err 0\nsent_pkts 100\nlifespan 10\n")
	after := ParseCounters("completer_retry_err 7\nrcvd_seq_err 2\nsent_pkts 900\nlifespan 10\n")
	if got := CounterDelta(before, after); got != "completer_retry_err=+3 rcvd_seq_err=+2" {
		t.Errorf("rxe: %q", got)
	}
	nb := ParseCounters("#kernel\nTcpRetransSegs                  10                 0.0\nIpInReceives 5 0.0\n")
	na := ParseCounters("#kernel\nTcpRetransSegs                  17                 0.0\nIpInReceives 50 0.0\nTcpExtTCPTimeouts 1 0.0\n")
	if got := CounterDelta(nb, na); got != "TcpExtTCPTimeouts=+1 TcpRetransSegs=+7" {
		t.Errorf("nstat: %q", got)
	}
}

// TestParseFaultTshark: the one tshark pass keeps each finding's
// sender, leaves TCP's loss recovery out, counts retransmissions and bad
// checksums by sender, finds RoCEv2 frames tshark did not dissect, and
// takes a frame rnic's own faults corrupted for no finding.
func TestParseFaultTshark(t *testing.T) {
	row := func(f ...string) string {
		for len(f) < len(faultFields) {
			f = append(f, "")
		}
		return strings.Join(f, "\t") + "\n"
	}
	out := row("12", "", "Previous segment(s) not captured (common at capture start)", "6291456", "10.77.0.22", "1", "1") +
		row("13", "", "This frame is a (suspected) out-of-order segment", "6291456", "10.77.0.22", "1", "1") +
		row("14", "1", "Malformed Packet (Exception occurred)", "8388608", "10.77.0.21") +
		row("15", "", "Bad checksum [should be 0xadc3]", "8388608", "10.77.0.22", "0", "1") +
		row("16", "", "This frame is a (suspected) fast retransmission|This frame is a (suspected) retransmission", "4194304|4194304", "10.77.0.62", "1", "1") +
		row("17", "", "", "", "10.77.0.21", "", "1", "4791", "") +
		row("18", "", "", "", "10.77.0.21", "", "1", "4791", "17") +
		row("19", "", "Bad checksum [should be 0x1]", "8388608", "10.77.0.62", "0", "1", "", "", "rnic: corrupted") +
		row("20", "", "TCP Checksum 0xffff instead of 0x0000 (see RFC 1624)", "6291456", "10.77.0.22", "0", "1")
	p := parseFaultTshark(out)
	var got []string
	for _, f := range p.Findings {
		got = append(got, f.Frame+" "+f.Src)
	}
	if want := []string{"14 10.77.0.21", "15 10.77.0.22", "17 10.77.0.21"}; !slices.Equal(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
	if p.Retrans["10.77.0.62"] != 1 || p.BadCk["10.77.0.22"] != 1 || p.BadCk["10.77.0.62"] != 0 {
		t.Errorf("retrans %v, bad checksums %v", p.Retrans, p.BadCk)
	}
}

// TestRnicFaultReport: the line rnic prints under --faults, its start
// line aside.
func TestRnicFaultReport(t *testing.T) {
	log := "rnic0: faults on TAP tap-i1: loss=0.05,seed=31 (replay: --faults loss=0.05,seed=31)\n" +
		"rnic0 1ms qp=0x1 comp  local ACK timeout: psn 5 unacknowledged (retry_cnt left 7)\n" +
		"rnic0: faults loss=0.05,seed=31: fault_tx_lost 12 retransmitted_pkts 31 retransmit_timeouts 4\n"
	got := RnicFaultReport(log)
	if got["fault_tx_lost"] != 12 || got["retransmitted_pkts"] != 31 || got["retransmit_timeouts"] != 4 || len(got) != 3 {
		t.Errorf("%v", got)
	}
	if s := reportString(got); s != "fault_tx_lost=12 retransmit_timeouts=4 retransmitted_pkts=31" {
		t.Errorf("reportString: %q", s)
	}
	if RnicFaultReport("rnic0: faults on TAP t: loss=0.05,seed=31 (replay: --faults loss=0.05,seed=31)\n") != nil {
		t.Error("a start line is no report")
	}
}

// TestVerdicts: a finding neither passes nor fails the run; the table
// says which is which and prints the fault rows' accounts.
func TestVerdicts(t *testing.T) {
	rows := Rows(Pairings)
	i := slices.IndexFunc(rows, func(r Row) bool { return r.Fault != nil })
	ws := &WireStats{Rnic: DirStats{Frames: 10, Retrans: 2}, Peer: DirStats{Frames: 12, NAKs: 1}}
	results := []Result{
		{Row: rows[0], Pass: true},
		{Row: rows[i], Reason: "guest rc=1: stalled", Finding: "rxe stalls", Wire: ws, RnicTrace: map[string]int{"timeouts": 3}, PeerDelta: "rcvd_seq_err=+1"},
	}
	if results[1].Failed() || results[1].Verdict() != "FINDING" || results[0].Verdict() != "PASS" {
		t.Errorf("verdicts: %s %s failed=%v", results[0].Verdict(), results[1].Verdict(), results[1].Failed())
	}
	var b bytes.Buffer
	WriteTable(&b, results)
	for _, s := range []string{"FINDING (rxe stalls)", "1/2 rows passed, 1 findings", "10/2/0/0", "12/0/1/0", "rcvd_seq_err=+1"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
	if code := report(&b, t.TempDir(), results, 2); code != 0 {
		t.Errorf("a finding failed the run: %d", code)
	}
	results[1].Finding = ""
	if code := report(&b, t.TempDir(), results, 2); code != 1 {
		t.Errorf("a failed row passed the run: %d", code)
	}
}

// TestKnownFinding: a fault row whose guest failed in a recorded way is a
// finding only while rnic's side held (unless the entry allows rnic to
// fail too, reporting the guest's failure), and only for its rows.
func TestKnownFinding(t *testing.T) {
	saved := findings
	defer func() { findings = saved }()
	findings = []finding{
		{rows: regexp.MustCompile(`^rxe netem loss 5% ib_read_bw`), guestSays: "Completion with error", note: "rxe gives up"},
		{rows: regexp.MustCompile(`^siw netem`), guestSays: "stalled", rnicMayFail: true, note: "siw stalls"},
	}
	rows := Rows(Pairings)
	row := func(label string) Row {
		i := slices.IndexFunc(rows, func(r Row) bool { return r.Label() == label })
		if i < 0 {
			t.Fatalf("no row %q", label)
		}
		return rows[i]
	}
	read := row("rxe netem loss 5% ib_read_bw 65536 / rnic client")
	failed := sideRC{rc: 1, tail: "Completion with error at client"}
	for _, c := range []struct {
		row         Row
		rnic, guest sideRC
		want        string
	}{
		{read, sideRC{}, failed, "rxe gives up"},
		{read, sideRC{rc: 1, tail: "RETRY_EXC_ERR"}, failed, ""},    // rnic failed too
		{read, sideRC{}, sideRC{rc: 1, tail: "something else"}, ""}, // not the recorded way
		{read, sideRC{}, sideRC{}, ""},                              // the guest did not fail
		{row("rxe netem loss 1% ib_read_bw 65536 / rnic client"), sideRC{}, failed, ""},
		{row("siw netem loss 5% rping -V / rnic server"), sideRC{rc: 1, tail: "peer gone"}, sideRC{rc: 1, tail: "stalled"}, "siw stalls"},
	} {
		if got := knownFinding(c.row, Result{rnicSide: c.rnic, guestSide: c.guest}); got != c.want {
			t.Errorf("%s, rnic %+v, guest %+v: %q, want %q", c.row.Label(), c.rnic, c.guest, got, c.want)
		}
	}
}
