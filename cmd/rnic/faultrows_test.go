package main

// rnic <-> rnic under seeded faults on real links: two rnic processes, each
// NIC on its own TAP on one bridge of a namespace the test creates, each
// faulting its own output (--faults, dir tx), so that every frame on the
// bridge crossed one injector. Every row checks its data (pingpong --chk,
// perf's own check, rping -V), reads what each side injected and what its
// engine did about it from the tools' fault reports, and holds both
// captures to the oracle: rnic's decoder and tshark object only to frames
// an injector corrupted (and to TCP's own recovery), and the captures show
// exactly as many corrupted frames as the injectors counted.

import (
	"crypto/sha256"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/tap/taptest"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/tsharktest"
)

// faultSet is one row's faults, given to both NICs (with seeds of their
// own).
type faultSet struct {
	name, spec string
}

// faultSets are the rows' faults: the rates one at a time, then
// all at once.
var faultSets = []faultSet{
	{"loss 1%", "loss=0.01"},
	{"loss 5%", "loss=0.05"},
	{"reorder 25%", "reorder=0.25"},
	{"dup 1%", "dup=0.01"},
	{"corrupt 0.1%", "corrupt=0.001"},
	{"combined", "loss=0.01,reorder=0.25,dup=0.01,corrupt=0.001"},
}

// workload is one program pair: the server's and the client's arguments
// (before the TAP flags; the client's end with the server's address), the
// operations it performs, and what the client prints on success.
type workload struct {
	name           string
	server, client []string
	ops            int
	done           string
	iwarp          bool
}

var faultWorkloads = []workload{
	{name: "pingpong --chk", server: []string{"pingpong", "-n", "100", "-s", "4096", "--chk"},
		client: []string{"pingpong", "-n", "100", "-s", "4096", "--chk"}, ops: 100, done: "100 iters in"},
	{name: "perf write_bw", server: []string{"perf", "--serve"},
		client: []string{"perf", "write_bw", "-s", "65536", "-n", "20"}, ops: 20, done: "65536"},
	{name: "perf read_bw", server: []string{"perf", "--serve"},
		client: []string{"perf", "read_bw", "-s", "16384", "-n", "20"}, ops: 20, done: "16384"},
	// rdma_cm gives rping's QPs Linux's RoCE timeout (code 19: 2.1 s, as
	// rxe's): each tail loss costs that long, hence few pings.
	{name: "rping -V", server: []string{"rping", "-s", "-V", "-C", "10", "-S", "4096"},
		client: []string{"rping", "-c", "-V", "-C", "10", "-S", "4096", "-a"}, ops: 10},
	{name: "iwarp perf write_bw", server: []string{"perf", "--iwarp", "--serve"},
		client: []string{"perf", "--iwarp", "write_bw", "-s", "65536", "-n", "20"}, ops: 20, done: "65536", iwarp: true},
	{name: "iwarp rping -V", server: []string{"rping", "--iwarp", "-s", "-V", "-C", "20", "-S", "4096"},
		client: []string{"rping", "--iwarp", "-c", "-V", "-C", "20", "-S", "4096", "-a"}, ops: 20, iwarp: true},
}

// faultResult is what one row measured.
type faultResult struct {
	injected map[string]uint64 // fault_tx_* of both sides
	reaction map[string]uint64 // retransmissions, timeouts, checksum drops of both sides
	secs     float64
	icrcBad  int // distinct frames with a bad ICRC in the captures (all corrupted ones)
	noted    int // corrupted frames the captures' notes show
}

// faultRowsAtOnce is how many rows run at the same time: most of a row's
// time is its engines waiting out retransmission timeouts, not CPU.
const faultRowsAtOnce = 4

// TestFaultRows runs every workload under every fault set, RoCEv2 and
// iWARP, and logs one line of figures per row. Rows run faultRowsAtOnce
// at a time (whatever go test's -parallel), each on TAPs and addresses of
// its own on the one bridge.
func TestFaultRows(t *testing.T) {
	tn := taptest.New(t, 93)
	// A bridge takes the lowest MAC of its ports unless given one: as the
	// rows' TAPs come and go its ARP would show 10.93.0.1 moving from MAC
	// to MAC, which tshark calls a duplicate address.
	tn.IP(t, "link", "set", tn.Bridge, "address", "02:00:00:00:5d:01")
	tsharktest.Path(t) // the oracle is part of every row
	rnicBinary(t)      // built once, before the rows race for it
	type job struct {
		n  int
		fs faultSet
		w  workload
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range faultRowsAtOnce {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				t.Run(j.fs.name+"/"+j.w.name, func(t *testing.T) {
					r := runFaultRow(t, tn, j.fs, j.w, j.n)
					t.Logf("row %-13s %-20s ops %3d  %5.1fs  injected %s  reaction %s  icrc_bad %d (noted corrupted %d)",
						j.fs.name, j.w.name, j.w.ops, r.secs, counts(r.injected), counts(r.reaction), r.icrcBad, r.noted)
				})
			}
		}()
	}
	n := 0
	for _, fs := range faultSets {
		for _, w := range faultWorkloads {
			n++
			jobs <- job{n, fs, w}
		}
	}
	close(jobs)
	wg.Wait()
}

// runFaultRow runs w between two TAP NICs under fs as row number row
// (its TAPs, addresses and seeds) and checks its data, its reports and its
// captures.
func runFaultRow(t *testing.T, tn *taptest.Net, fs faultSet, w workload, row int) faultResult {
	dir := t.TempDir()
	if d := os.Getenv("RNIC_FAULT_ROWS_KEEP"); d != "" { // keep the captures to look at
		dir = filepath.Join(d, fmt.Sprintf("row%02d", row))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srvAddr, cliAddr := tn.Addr4(2*row), tn.Addr4(2*row+1)
	seed := 1000 + 2*row
	side := func(tap string, ip netip.Prefix, seed int, pcapPath string) []string {
		return []string{"--tap", tap, "--ip", ip.String(), "--netns", tn.Name, "--bridge", tn.Bridge,
			"--faults", fmt.Sprintf("%s,seed=%d", fs.spec, seed), "--pcap", pcapPath}
	}
	pcaps := []string{filepath.Join(dir, "server.pcapng"), filepath.Join(dir, "client.pcapng")}
	begin := time.Now()
	srv := start(t, "server", append(append([]string{}, w.server...), side(fmt.Sprintf("fr%d-s", row), srvAddr, seed, pcaps[0])...)...)
	if out, ok := tn.Ping(srvAddr.Addr(), 20*time.Second); !ok {
		t.Fatalf("ping %v: %s\nserver: %s", srvAddr, out, srv.out.String())
	}
	cliArgs := append(append(append([]string{}, w.client...), srvAddr.Addr().String()), side(fmt.Sprintf("fr%d-c", row), cliAddr, seed+1, pcaps[1])...)
	cli := startClient(t, cliArgs, srv)
	outs := []string{srv.wait(t, 90*time.Second), cli.wait(t, 90*time.Second)}
	res := faultResult{secs: time.Since(begin).Seconds(), injected: map[string]uint64{}, reaction: map[string]uint64{}}
	if w.done != "" && !strings.Contains(outs[1], w.done) {
		t.Errorf("client output lacks %q:\n%s", w.done, outs[1])
	}
	for i, out := range outs {
		rep, ok := faultReport(out)
		if !ok {
			t.Fatalf("%s printed no fault report:\n%s", []string{"server", "client"}[i], out)
		}
		for k, v := range rep {
			if strings.HasPrefix(k, "fault_") {
				res.injected[k] += v
			} else {
				res.reaction[k] += v
			}
		}
	}
	if res.injected["fault_rx_lost"]+res.injected["fault_rx_corrupted"] != 0 {
		t.Errorf("faults injected on receive with dir tx: %v", res.injected)
	}
	res.icrcBad, res.noted = checkFaultCaptures(t, pcaps, w.iwarp)
	if w.iwarp {
		// server.pcapng's corrupted frames went to the client, and the
		// other way round.
		checkChecksumDrops(t, pcaps, [2]time.Time{reportedAt(cli), reportedAt(srv)}, res.reaction)
	}
	if got := uint64(res.noted); got != res.injected["fault_tx_corrupted"] {
		t.Errorf("the captures note %d corrupted frames, the injectors counted %d", got, res.injected["fault_tx_corrupted"])
	}
	return res
}

// startClient starts the row's client. An rping server says nothing once
// it listens, and its NIC answers ping a moment before, so a client may
// come too early and be rejected (rping's RDMA_CM_EVENT_REJECTED, as on
// rxe; over iWARP its TCP connection is refused); it is started again
// then, while the server waits.
func startClient(t *testing.T, args []string, srv *proc) *proc {
	t.Helper()
	for attempt := 1; ; attempt++ {
		cli := start(t, "client", args...)
		if attempt == 3 || args[0] != "rping" {
			return cli
		}
		select {
		case <-cli.done:
			out := strings.ToLower(cli.out.String())
			if cli.err == nil || !strings.Contains(out, "reject") && !strings.Contains(out, "refused") {
				return cli
			}
			select {
			case <-srv.done:
				return cli // the server gave up: the row fails on it
			default:
			}
			t.Logf("client attempt %d turned away (the server not yet listening): %s", attempt, strings.TrimSpace(cli.out.String()))
			time.Sleep(200 * time.Millisecond)
		case <-time.After(5 * time.Second):
			return cli // connected: it runs on
		}
	}
}

// reportLine is a tool's closing fault report: "rnic0: faults SPEC: k v k v".
var reportLine = regexp.MustCompile(`(?m)^rnic\d+: faults \S+: ?(.*)$`)

// reportedAt is when p printed its fault report, the counters it read
// then; when it exited if it printed none. Under load a teardown takes
// long after the report (CI: a corrupted segment 0.3 s before the exit,
// after the report, refused by nobody's counters).
func reportedAt(p *proc) time.Time {
	if at, ok := p.out.When(reportLine); ok {
		return at
	}
	return p.exited
}

// faultReport parses the fault report in a tool's output.
func faultReport(out string) (map[string]uint64, bool) {
	m := reportLine.FindStringSubmatch(out)
	if m == nil {
		return nil, false
	}
	rep := map[string]uint64{}
	f := strings.Fields(m[1])
	for i := 0; i+1 < len(f); i += 2 {
		v, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return nil, false
		}
		rep[f[i]] = v
	}
	return rep, true
}

// checkFaultCaptures holds the captures of one row to the oracle and
// returns the distinct RoCEv2 frames with a bad ICRC and the corrupted
// frames the injectors noted, each counted once (a corrupted frame shows
// in its sender's capture, noted, and again in its receiver's, with the
// same bytes and no note).
//
// Every frame with a bad ICRC must be one an injector corrupted. The
// corrupted frames are then taken out, as the receivers' checks take them
// out (ICRC; IP and TCP checksums; a MAC no one owns), and what is left
// must satisfy the decoder and tshark entirely, TCP's analysis of loss and
// retransmission aside, and for iWARP the stream gaps the decoder reports
// where a segment lost at the end never came again: an iWARP RDMA WRITE
// completes once TCP has its bytes, so a program may close its connection
// with the last segment still unacknowledged, as on siw. A corrupted frame may keep a good ICRC: a bit of
// the Ethernet header, or one the ICRC masks (IP TTL, checksum, traffic
// class), is caught elsewhere or harms nothing.
func checkFaultCaptures(t *testing.T, paths []string, iwarp bool) (icrcBad, noted int) {
	t.Helper()
	corrupted := map[[32]byte]bool{}
	frames := make([][]pcap.Frame, len(paths))
	for i, p := range paths {
		fr, err := pcap.ReadFile(p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		frames[i] = fr
		for _, f := range fr {
			if hasNote(f, "corrupted") {
				corrupted[sha256.Sum256(f.Data)] = true
				if !hasNote(f, "duplicate") { // the injector counts the frame, not its copies
					noted++
				}
			}
		}
	}
	badFrames := map[[32]byte]bool{}
	for i, p := range paths {
		name := filepath.Base(p)
		for n, f := range frames[i] {
			rec := decode.DecodeFrame(f.Data, 0)
			if rec.Kind != decode.KindRoCE || rec.ICRCOK {
				continue
			}
			badFrames[sha256.Sum256(f.Data)] = true
			if !corrupted[sha256.Sum256(f.Data)] {
				t.Errorf("decode %s: frame %d has a bad ICRC and no injector corrupted it", name, n+1)
			}
		}
		clean := withoutFrames(t, p, frames[i], corrupted)
		var out strings.Builder
		sum, err := decode.Run(&out, []string{clean}, decode.Options{})
		if err != nil {
			t.Fatalf("decode %s: %v", name, err)
		}
		gaps := 0
		if iwarp {
			gaps = strings.Count(out.String(), "unknown: iwarp tcp_gap ")
		}
		if sum.ICRCBad != 0 || sum.CRCBad != 0 || sum.Unknown != gaps || (iwarp && sum.IWARP == 0) || (!iwarp && sum.RoCE == 0) {
			t.Errorf("decode %s without its corrupted frames: %s (tcp gaps %d)", name, sum.Line(), gaps)
		}
		for _, fd := range tsharktest.Findings(t, clean, tsharktest.Options{}) {
			if !tcpRecovery(fd) {
				t.Errorf("tshark %s without its corrupted frames: frame %d: malformed %v, %q", name, fd.Frame, fd.Malformed, fd.Messages)
			}
		}
	}
	return len(badFrames), noted
}

// withoutFrames writes the frames of the capture at path whose bytes are
// not in drop to a new capture beside it, and returns its path.
func withoutFrames(t *testing.T, path string, frames []pcap.Frame, drop map[[32]byte]bool) string {
	t.Helper()
	clean := strings.TrimSuffix(path, ".pcapng") + "-clean.pcapng"
	w, err := pcap.Create(clean)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if !drop[sha256.Sum256(f.Data)] {
			_ = w.WriteFrame(f.Timestamp, f.Data) // errors are sticky: Close reports them
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("write %s: %v", clean, err)
	}
	return clean
}

// checkChecksumDrops checks that the NICs refused every corrupted TCP
// frame whose IPv4 or TCP checksum tshark finds wrong, and nothing else: a
// corrupted iWARP segment never reaches the stream (and so no memory; the
// row's data check says the rest arrived). The corrupted frames are the
// noted ones of each sender's capture, each copy of a duplicate counted.
//
// A corrupted frame that reaches its receiver only as it ends (the last
// segments of a teardown) is refused by nobody's counters: the receiver has
// printed them. Frames sent less than lateMargin before the receiver
// printed its fault report (reportedAt) are left out of the count, and
// logged.
func checkChecksumDrops(t *testing.T, pcaps []string, receiverReport [2]time.Time, reaction map[string]uint64) {
	t.Helper()
	const lateMargin = 250 * time.Millisecond
	bad, late := 0, 0
	for i, p := range pcaps {
		o := tsharktest.Options{Filter: `frame.comment contains "corrupted" && tcp`}
		for _, r := range tsharktest.Fields(t, p, o, "tcp.checksum.status", "ip.checksum.status", "frame.time_epoch") {
			if r["tcp.checksum.status"] != "0" && r["ip.checksum.status"] != "0" {
				continue
			}
			if at, err := strconv.ParseFloat(r["frame.time_epoch"], 64); err == nil &&
				time.Unix(0, int64(at*1e9)).After(receiverReport[i].Add(-lateMargin)) {
				late++
				continue
			}
			bad++
		}
	}
	if late > 0 {
		t.Logf("%d corrupted TCP frames reached their receiver as it ended: not counted", late)
	}
	dropped := reaction["tcp_checksum_errors"] + reaction["host_bad_checksum"] + reaction["host_malformed"]
	if dropped < uint64(bad) || dropped > uint64(bad+late) {
		t.Errorf("%d corrupted TCP frames fail a checksum, the NICs refused %d (tcp_checksum_errors %d, host_bad_checksum %d, host_malformed %d)",
			bad, dropped, reaction["tcp_checksum_errors"], reaction["host_bad_checksum"], reaction["host_malformed"])
	}
}

// hasNote reports whether a captured frame carries the link note n.
func hasNote(f pcap.Frame, n string) bool {
	for _, c := range f.Comments {
		if notes, ok := strings.CutPrefix(c, "rnic: "); ok && strings.Contains(","+notes+",", ","+n+",") {
			return true
		}
	}
	return false
}

// tcpRecovery reports whether a finding is only TCP's sequence analysis of
// a lossy, reordering, duplicating wire (segments missing from the
// capture, out of order, retransmitted, their ACKs), which TCP recovers
// from by design.
func tcpRecovery(fd tsharktest.Finding) bool {
	if fd.Malformed || len(fd.Messages) == 0 {
		return false
	}
	for _, m := range fd.Messages {
		switch {
		case strings.Contains(m, "Previous segment(s) not captured"),
			strings.Contains(m, "out-of-order segment"),
			strings.Contains(m, "retransmission"),
			strings.Contains(m, "ACKed segment that wasn't captured"),
			strings.Contains(m, "D-SACK Sequence"),
			// A FIN or its ACK lost at the end: the closed side answers
			// the retransmission with a reset, as any TCP does.
			strings.Contains(m, "Connection reset (RST)"),
			strings.Contains(m, "TCP window specified by the receiver is now completely full"),
			strings.Contains(m, "TCP Zero Window segment"):
		default:
			return false
		}
	}
	return true
}

// counts prints a counter map in a stable order, zero ones left out.
func counts(m map[string]uint64) string {
	var keys []string
	for k, v := range m {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", strings.TrimPrefix(k, "fault_tx_"), m[k])
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}
