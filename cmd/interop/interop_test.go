package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/pcap"
)

// captures holds the golden captures taken in the lab.
const captures = "../../testdata/captures"

// golden reads a golden capture.
func golden(t *testing.T, name string) []pcap.Frame {
	t.Helper()
	frames, err := pcap.ReadFile(filepath.Join(captures, name))
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// goldenRetrans are the golden captures that do hold a retransmission:
// in rxe-write-lat-64.pcap, 10.77.0.12 sends WRITE Only PSN 232781 in
// frame #349 and again in #352 (after the ACK had come in #350); the
// send-lat capture has the same kind of repeat. Real duplicates, so the
// counter must find them.
var goldenRetrans = map[string]int{"rxe-write-lat-64.pcap": 1, "rxe-send-lat-64.pcap": 1}

// TestRetransmissionsGolden: real rxe-to-rxe runs on the clean bridge
// retransmit (almost) nothing: the counter must say 0 on every golden
// RoCEv2 capture (RC WRITE, READ, SEND, atomics, UD, CM MADs on QP1)
// but the two that do repeat a PSN.
func TestRetransmissionsGolden(t *testing.T) {
	names, _ := filepath.Glob(filepath.Join(captures, "rxe-*.pcap"))
	if len(names) == 0 {
		t.Fatal("no golden rxe captures in " + captures)
	}
	for _, path := range names {
		n, err := CountRoCERetransmissionsFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := goldenRetrans[filepath.Base(path)]; n != want {
			t.Errorf("%s: %d retransmissions, want %d", filepath.Base(path), n, want)
		}
	}
}

// TestRetransmissionsDuplicate: a request frame sent a second time is one
// retransmission, written out and read back as a capture; a duplicated
// ACK (a response) is none.
func TestRetransmissionsDuplicate(t *testing.T) {
	frames := golden(t, "rxe-write-bw-4096.pcap")
	if n := CountRoCERetransmissions(frames); n != 0 {
		t.Fatalf("golden: %d, want 0", n)
	}
	var req, ack = -1, -1
	var f wire.Frame
	for i, fr := range frames {
		if f.Decode(fr.Data, 0) != nil {
			continue
		}
		if f.Packet.Info().Response {
			if ack < 0 {
				ack = i
			}
		} else if req < 0 && f.Packet.Opcode() == wire.RCWriteMiddle {
			req = i
		}
	}
	if req < 0 || ack < 0 {
		t.Fatalf("no WRITE Middle (%d) or ACK (%d) in the capture", req, ack)
	}
	// The duplicate goes a little later, as a retry would.
	dup := slices.Insert(slices.Clone(frames), req+3, frames[req])
	var buf bytes.Buffer
	pw, err := pcap.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, fr := range dup {
		pw.WriteFrame(fr.Timestamp, fr.Data)
	}
	pw.Flush()
	back, err := pcap.ReadFrom(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n := CountRoCERetransmissions(back); n != 1 {
		t.Errorf("one duplicated WRITE Middle: %d retransmissions, want 1", n)
	}
	acks := slices.Insert(slices.Clone(frames), ack+1, frames[ack])
	if n := CountRoCERetransmissions(acks); n != 0 {
		t.Errorf("a duplicated ACK: %d retransmissions, want 0", n)
	}
}

// TestRetransmissionsIgnoresOtherFrames: ARP, TCP and garbage do not
// count and do not panic.
func TestRetransmissionsIgnoresOtherFrames(t *testing.T) {
	junk := []pcap.Frame{{Data: nil}, {Data: []byte{1, 2, 3}}, {Data: make([]byte, 60)}, {Data: make([]byte, 60)}}
	if n := CountRoCERetransmissions(junk); n != 0 {
		t.Errorf("%d", n)
	}
}

func TestSelect(t *testing.T) {
	rows := Rows(Pairings)
	labels := func(rs []Row) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Label())
		}
		return out
	}
	smoke, err := Select(rows, "", true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rxe rc pingpong 64 / rnic server", "rxe rc pingpong 64 / rnic client",
		"siw rping / rnic server", "siw rping / rnic client", "rxe passthrough pingpong 64 / rnic server",
		"rxe passthrough tests / tests", "rxe passthrough tests / tests -race",
		"siw passthrough tests / tests", "siw passthrough tests / tests -race",
		"rxe drop-in rc pingpong 64 / rnic server", "rxe drop-in rc pingpong 64 / rnic client",
		"rxe drop-in rping / rnic server", "rxe drop-in rping / rnic client",
		"siw drop-in rping / rnic server", "siw drop-in rping / rnic client"}
	if got := labels(smoke); !slices.Equal(got, want) {
		t.Errorf("smoke: %q, want %q", got, want)
	}
	rc, err := Select(rows, "rc pingpong", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rc {
		if !strings.Contains(r.Name, "rc pingpong") {
			t.Errorf("--only 'rc pingpong' selected %q", r.Label())
		}
	}
	if len(rc) < 4 || len(rc)%2 != 0 {
		t.Errorf("--only 'rc pingpong': %d rows", len(rc))
	}
	onlyClient, _ := Select(rows, "^siw rping / rnic client$", false)
	if got := labels(onlyClient); !slices.Equal(got, []string{"siw rping / rnic client"}) {
		t.Errorf("one role: %q", got)
	}
	both, _ := Select(rows, "^siw rping", true)
	if len(both) != 2 {
		t.Errorf("--smoke --only rping: %q", labels(both))
	}
	if _, err := Select(rows, "no such row", false); err == nil {
		t.Error("an empty selection is not an error")
	}
	if _, err := Select(rows, "(", false); err == nil {
		t.Error("a bad regexp is not an error")
	}
}

// TestTable: the table covers every pairing, every label is unique, every
// row has both commands, and the commands are the lab's.
func TestTable(t *testing.T) {
	rows := Rows(Pairings)
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.Label()] {
			t.Errorf("duplicate row %q", r.Label())
		}
		seen[r.Label()] = true
		if Guests[r.Guest] == nil {
			t.Fatalf("%s: unknown guest %q", r.Name, r.Guest)
		}
		if r.GuestCommand() == "" || strings.Contains(r.GuestCommand(), "{") ||
			(r.Tests || r.Dropin) != (len(r.RnicArgs("x.pcap")) == 0) || !r.Tests && !r.Dropin && len(r.RnicArgs("x.pcap")) < 2 ||
			r.Dropin && len(r.ProgramArgs()) < 2 {
			t.Errorf("%s: incomplete commands", r.Label())
		}
	}
	for _, name := range []string{
		"rxe rc pingpong 64", "rxe ud pingpong 512", "rxe ib_write_bw 65536", "rxe ib_read_bw 4096",
		"rxe ib_send_bw 64", "rxe ib_send_bw -c UD 1024", "rxe ib_atomic_bw FETCH_AND_ADD",
		"rxe ib_atomic_bw CMP_AND_SWAP", "rxe ib_write_lat 64", "rxe ib_read_lat 64", "rxe ib_send_lat 64",
		"rxe rping", "rxe ib_write_bw -R 4096", "rxe9000 ib_write_bw 65536", "rxe9000 rc pingpong 4096",
		"siw rping", "siw ib_write_bw 4096", "siw ib_read_bw 4096", "siw ib_send_bw 4096",
		"siw ib_write_lat 64", "siwcrc rping", "siwcrc ib_send_lat 64",
		"rxe passthrough pingpong 64", "siw passthrough rping",
	} {
		if !seen[name+" / rnic server"] || !seen[name+" / rnic client"] {
			t.Errorf("row %q missing in a role", name)
		}
	}
	byLabel := map[string]Row{}
	for _, r := range rows {
		byLabel[r.Label()] = r
	}
	for _, c := range []struct{ label, guest, rnic string }{
		{"rxe rc pingpong 64 / rnic server", "ibv_rc_pingpong -d rxe0 -g 1 -n 10 -s 64 10.77.0.61",
			"pingpong --netns rnlab --bridge br0 --tap tap-i1 --ip 10.77.0.61/24 --pcap x.pcap -g 1 -n 10 -s 64"},
		{"rxe rc pingpong 64 / rnic client", "ibv_rc_pingpong -d rxe0 -g 1 -n 10 -s 64",
			"pingpong --netns rnlab --bridge br0 --tap tap-i1 --ip 10.77.0.61/24 --pcap x.pcap -g 1 -n 10 -s 64 10.77.0.21"},
		{"siw rping / rnic server", "rping -c -a 10.77.0.62 -v -C 10",
			"rping --netns rnlab --bridge br0 --tap tap-i2 --ip 10.77.0.62/24 --pcap x.pcap --iwarp -s -a 10.77.0.62 -C 10 -v -V"},
		{"siw rping / rnic client", "rping -s -a 10.77.0.22 -v -C 10",
			"rping --netns rnlab --bridge br0 --tap tap-i2 --ip 10.77.0.62/24 --pcap x.pcap --iwarp -c -a 10.77.0.22 -C 10 -v -V"},
		{"rxe ib_send_bw -c UD 1024 / rnic client", "ib_send_bw -d rxe0 -x 1 -F -c UD -s 1024 -n 20",
			"perf --netns rnlab --bridge br0 --tap tap-i1 --ip 10.77.0.61/24 --pcap x.pcap --op send --mode bw -x 1 -F -c UD -s 1024 -n 20 10.77.0.21"},
		{"rxe9000 ib_write_bw 65536 / rnic server", "ib_write_bw -d rxe0 -x 1 -F -s 65536 -n 5 10.77.0.63",
			"perf --netns rnlab --bridge br0 --tap tap-i3 --ip 10.77.0.63/24 --pcap x.pcap --tap-mtu 9000 --op write --mode bw -x 1 -F -s 65536 -n 5 --serve"},
		{"siwcrc ib_read_bw 4096 / rnic client", "ib_read_bw -d siw0 -R -F -s 4096 -n 20",
			"perf --netns rnlab --bridge br0 --tap tap-i4 --ip 10.77.0.64/24 --pcap x.pcap --iwarp --op read --mode bw -R -F -s 4096 -n 20 10.77.0.24"},
		{"rxe passthrough pingpong 64 / rnic client", "/lab/rnic-verbs pingpong -d verbs:rxe0 -g 1 -n 10 -s 64",
			"pingpong --netns rnlab --bridge br0 --tap tap-i1 --ip 10.77.0.61/24 --pcap x.pcap -g 1 -n 10 -s 64 10.77.0.21"},
		{"siw passthrough rping / rnic server", "/lab/rnic-verbs rping --ib-dev verbs:siw0 -c -a 10.77.0.62 -C 10 -v -V",
			"rping --netns rnlab --bridge br0 --tap tap-i2 --ip 10.77.0.62/24 --pcap x.pcap --iwarp -s -a 10.77.0.62 -C 10 -v -V"},
		{"rxe passthrough tests / tests -race", "cd /lab && ./passthrough.race.test -test.v -test.count 1 -test.timeout 290s", ""},
		{"rxe ib_atomic_bw CMP_AND_SWAP / rnic server", "ib_atomic_bw -d rxe0 -x 1 -F -A CMP_AND_SWAP -n 50 10.77.0.61",
			"perf --netns rnlab --bridge br0 --tap tap-i1 --ip 10.77.0.61/24 --pcap x.pcap --op atomic --mode bw -x 1 -F -A CMP_AND_SWAP -n 50 --serve"},
	} {
		r, ok := byLabel[c.label]
		if !ok {
			t.Errorf("no row %q", c.label)
			continue
		}
		if got := r.GuestCommand(); got != c.guest {
			t.Errorf("%s guest:\n got %s\nwant %s", c.label, got, c.guest)
		}
		if got := strings.Join(r.RnicArgs("x.pcap"), " "); got != c.rnic {
			t.Errorf("%s rnic:\n got %s\nwant %s", c.label, got, c.rnic)
		}
	}
}

// TestDropinRows: the drop-in rows run Debian's own tools on rnic, in both
// roles: rnicd on the guest's TAP with its capture, the program on rnicd's
// rnic0 with the guest's GID index, and the guest's client dialing the
// side channel at rnicd's NIC's address, where the program's view has it
// (its interface is the NIC's host port), as at an rxe port's.
func TestDropinRows(t *testing.T) {
	byLabel := map[string]Row{}
	for _, r := range Rows(Pairings) {
		byLabel[r.Label()] = r
	}
	for _, c := range []struct{ label, guest, program string }{
		{"rxe drop-in rc pingpong 64 / rnic server", "ibv_rc_pingpong -d rxe0 -g 1 -n 10 -s 64 10.77.0.61",
			"ibv_rc_pingpong -d rnic0 -g 1 -n 10 -s 64"},
		{"rxe drop-in rc pingpong 64 / rnic client", "ibv_rc_pingpong -d rxe0 -g 1 -n 10 -s 64",
			"ibv_rc_pingpong -d rnic0 -g 1 -n 10 -s 64 10.77.0.21"},
		{"rxe drop-in ib_write_bw 65536 / rnic server", "ib_write_bw -d rxe0 -x 1 -F -s 65536 -n 5 10.77.0.61",
			"ib_write_bw -d rnic0 -x 1 -F -s 65536 -n 5"},
		{"rxe drop-in ib_write_bw 65536 / rnic client", "ib_write_bw -d rxe0 -x 1 -F -s 65536 -n 5",
			"ib_write_bw -d rnic0 -x 1 -F -s 65536 -n 5 10.77.0.21"},
	} {
		r, ok := byLabel[c.label]
		if !ok {
			t.Errorf("no row %q", c.label)
			continue
		}
		if got := r.GuestCommand(); got != c.guest {
			t.Errorf("%s guest:\n got %s\nwant %s", c.label, got, c.guest)
		}
		if got := strings.Join(r.ProgramArgs(), " "); got != c.program {
			t.Errorf("%s program:\n got %s\nwant %s", c.label, got, c.program)
		}
		want := "--name rnic0 --tap tap-i1 --ip 10.77.0.61/24 --netns rnlab --bridge br0 --pcap x.pcap --socket x.sock"
		if got := strings.Join(r.RnicdArgs("x.pcap", "x.sock"), " "); got != want {
			t.Errorf("%s rnicd:\n got %s\nwant %s", c.label, got, want)
		}
	}
}

// TestDropinCMRows: the rdma_cm drop-in rows, programs connecting through rdma_cm:
// the guest's client and the program's server address rnicd's NIC (its
// TAP address), not the namespace's; for siw guests rnicd's NIC is an
// iWARP one.
func TestDropinCMRows(t *testing.T) {
	byLabel := map[string]Row{}
	for _, r := range Rows(Pairings) {
		byLabel[r.Label()] = r
	}
	for _, c := range []struct{ label, guest, program, rnicd string }{
		{"rxe drop-in rping / rnic server", "rping -c -a 10.77.0.61 -v -C 10", "rping -s -a 10.77.0.61 -v -C 10",
			"--name rnic0 --tap tap-i1 --ip 10.77.0.61/24 --netns rnlab --bridge br0 --pcap x.pcap --socket x.sock"},
		{"rxe drop-in rping / rnic client", "rping -s -a 10.77.0.21 -v -C 10", "rping -c -a 10.77.0.21 -v -C 10",
			"--name rnic0 --tap tap-i1 --ip 10.77.0.61/24 --netns rnlab --bridge br0 --pcap x.pcap --socket x.sock"},
		{"siw drop-in rping / rnic server", "rping -c -a 10.77.0.62 -v -C 10", "rping -s -a 10.77.0.62 -v -C 10",
			"--name rnic0 --tap tap-i2 --ip 10.77.0.62/24 --netns rnlab --bridge br0 --pcap x.pcap --socket x.sock --transport iwarp"},
		{"siwcrc drop-in rping / rnic client", "rping -s -a 10.77.0.24 -v -C 10", "rping -c -a 10.77.0.24 -v -C 10",
			"--name rnic0 --tap tap-i4 --ip 10.77.0.64/24 --netns rnlab --bridge br0 --pcap x.pcap --socket x.sock --transport iwarp"},
		{"siw drop-in ib_write_bw -R 65536 / rnic server", "ib_write_bw -d siw0 -R -F -s 65536 -n 5 10.77.0.62",
			"ib_write_bw -d rnic0 -R -F -s 65536 -n 5",
			"--name rnic0 --tap tap-i2 --ip 10.77.0.62/24 --netns rnlab --bridge br0 --pcap x.pcap --socket x.sock --transport iwarp"},
		{"siw drop-in ib_write_bw -R 65536 / rnic client", "ib_write_bw -d siw0 -R -F -s 65536 -n 5",
			"ib_write_bw -d rnic0 -R -F -s 65536 -n 5 10.77.0.22",
			"--name rnic0 --tap tap-i2 --ip 10.77.0.62/24 --netns rnlab --bridge br0 --pcap x.pcap --socket x.sock --transport iwarp"},
	} {
		r, ok := byLabel[c.label]
		if !ok {
			t.Errorf("no row %q", c.label)
			continue
		}
		if got := r.GuestCommand(); got != c.guest {
			t.Errorf("%s guest:\n got %s\nwant %s", c.label, got, c.guest)
		}
		if got := strings.Join(r.ProgramArgs(), " "); got != c.program {
			t.Errorf("%s program:\n got %s\nwant %s", c.label, got, c.program)
		}
		if got := strings.Join(r.RnicdArgs("x.pcap", "x.sock"), " "); got != c.rnicd {
			t.Errorf("%s rnicd:\n got %s\nwant %s", c.label, got, c.rnicd)
		}
	}
}

func TestWriteTable(t *testing.T) {
	p := &Pairing{Name: "rxe rc pingpong 64", Guest: "rxe"}
	var buf bytes.Buffer
	WriteTable(&buf, []Result{
		{Row: Row{p, RnicServer}, Pass: true, Packets: 53, Retrans: 0, Seconds: 4.2},
		{Row: Row{p, RnicClient}, Reason: "guest rc=1: Failed to modify QP to RTR\n more", Packets: -1, Retrans: -1},
	})
	want := `pairing             role         result                                              packets  retrans  secs
rxe rc pingpong 64  rnic server  PASS                                                53       0        4
rxe rc pingpong 64  rnic client  FAIL (guest rc=1: Failed to modify QP to RTR more)  -        -        0
1/2 rows passed
`
	if buf.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
	long := oneLine(strings.Repeat("x", 100), 10)
	if len([]rune(long)) != 10 || !strings.HasSuffix(long, "…") {
		t.Errorf("oneLine: %q", long)
	}
}

func TestParseDecodeSummary(t *testing.T) {
	s, err := ParseDecodeSummary("#1 ...\nsummary: frames=36 roce=20 icrc_bad=1 iwarp=0 crc_bad=0 unknown=2\n")
	if err != nil {
		t.Fatal(err)
	}
	if s != (DecodeSummary{36, 20, 1, 0, 0, 2}) {
		t.Errorf("%+v", s)
	}
	if p := s.Problem(false); p != "1 bad ICRC, 2 unknown" {
		t.Errorf("problem %q", p)
	}
	if p := s.Problem(true); !strings.Contains(p, "no RDMA frames") {
		t.Errorf("iWARP row without FPDUs: %q", p)
	}
	if p := (DecodeSummary{Frames: 9, IWARP: 5}).Problem(true); p != "" {
		t.Errorf("clean: %q", p)
	}
	if _, err := ParseDecodeSummary("nothing"); err == nil {
		t.Error("no summary line accepted")
	}
}

func TestParseOracle(t *testing.T) {
	out := "106\t\tConnection reset (RST)\t6291456\n" +
		"7\t\tIWARP_MPA Rev field is NOT set to one as required by RFC 5044|Odd\t6291456|8388608\n" +
		"9\tMalformed\tMalformed Packet (Exception occurred)\t8388608\n" +
		"12\t\tchatty\t2097152\n"
	fs := ParseOracle(out)
	want := []OracleFinding{{"7", "Odd"}, {"9", "malformed: Malformed Packet (Exception occurred)"}}
	if !slices.Equal(fs, want) {
		t.Errorf("findings %q, want %q", fs, want)
	}
}

// testOutputRxe is -test.v output of the passthrough tests on rxe, cut
// down: a logged line of a passing subtest, a skip, and the verdict.
const testOutputRxe = `=== RUN   TestCMLoopback
--- PASS: TestCMLoopback (0.14s)
=== RUN   TestConformance
=== RUN   TestConformance/Errors/BadLKey
    errs.go:116: receive posted in ERR not flushed within 1s (rxe's behaviour); modifying the QP to ERR
--- PASS: TestConformance (2.03s)
    --- PASS: TestConformance/Errors/BadLKey (1.09s)
--- PASS: TestConformanceCM (0.27s)
    --- PASS: TestConformanceCM/Connect (0.11s)
--- PASS: TestRDMA (0.02s)
--- SKIP: TestRegMRIOVA (0.02s)
PASS
`

// TestTestOutput: a passing run with the device tests is clean; a run in
// which they skipped (no device) is not, although it says PASS; a failed
// run names the failed test and its first message, not a passing
// subtest's log line.
func TestTestOutput(t *testing.T) {
	to := ParseTestOutput(testOutputRxe)
	if p := to.Problem(false); p != "" || to.Passed != 4 || to.Skipped != 1 {
		t.Errorf("passing run: problem %q, %d passed, %d skipped", p, to.Passed, to.Skipped)
	}
	noDevice := "--- SKIP: TestConformance (0.00s)\n--- SKIP: TestConformanceCM (0.00s)\n--- PASS: TestEnumsMatchLibibverbs (0.00s)\nPASS\n"
	if p := ParseTestOutput(noDevice).Problem(true); !strings.Contains(p, "TestConformanceCM") || !strings.Contains(p, "TestRDMA") {
		t.Errorf("run without a device: problem %q", p)
	}
	// On iWARP, TestConformance may skip.
	iw := strings.Replace(testOutputRxe, "--- PASS: TestConformance (2.03s)", "--- SKIP: TestConformance (0.02s)", 1)
	if p := ParseTestOutput(iw).Problem(true); p != "" {
		t.Errorf("iWARP run: problem %q", p)
	}
	if p := ParseTestOutput(iw).Problem(false); !strings.Contains(p, "TestConformance") {
		t.Errorf("RoCE run without TestConformance: problem %q", p)
	}
	failed := `=== RUN   TestConformance
=== RUN   TestConformance/RC/Send
    side.go:10: a log line of a passing subtest
=== RUN   TestConformance/Errors/BadLKey
    errs.go:48: send with a bad lkey: completion {wr 10, SUCCESS}
--- FAIL: TestConformance (0.5s)
    --- PASS: TestConformance/RC/Send (0.1s)
    --- FAIL: TestConformance/Errors/BadLKey (0.1s)
FAIL
`
	to = ParseTestOutput(failed)
	if p := to.Problem(false); !strings.Contains(p, "1 failed: TestConformance") || !strings.Contains(p, "no PASS line") {
		t.Errorf("failed run: problem %q", p)
	}
	if got, want := to.FirstFailure(failed), "TestConformance/Errors/BadLKey: errs.go:48: send with a bad lkey: completion {wr 10, SUCCESS}"; got != want {
		t.Errorf("FirstFailure: %q, want %q", got, want)
	}
	race := "=== RUN   TestRDMA\n==================\nWARNING: DATA RACE\nWrite at ...\n"
	if got := ParseTestOutput(race).FirstFailure(race); got != "WARNING: DATA RACE" {
		t.Errorf("FirstFailure of a race: %q", got)
	}
}

// TestStageUnbuilt: a passthrough row whose binary did not build fails
// with the build's error, and one never built says so.
func TestStageUnbuilt(t *testing.T) {
	rn := &Runner{Lab: &Lab{}, Guest: map[string]GuestFile{testFile: {Err: errors.New("cannot find -libverbs")}}}
	if err := rn.stage(Guests["rxe"], testFile); err == nil || !strings.Contains(err.Error(), "cannot find -libverbs") {
		t.Errorf("stage of a failed build: %v", err)
	}
	if err := rn.stage(Guests["rxe"], raceTestFile); err == nil || !strings.Contains(err.Error(), "not built") {
		t.Errorf("stage of an unbuilt file: %v", err)
	}
}
