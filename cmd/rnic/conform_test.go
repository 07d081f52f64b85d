package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform"
	"github.com/rnic/rnic/roce/decode"
	"github.com/rnic/rnic/tap/taptest"
)

// TestConformTwoProcesses runs the agent and the tester as the README
// shows, two processes on loopback: the JSON report parses, every case
// passes against rnic, the JUnit file parses with one testcase per case,
// and the capture holds every frame the evidence names (the case with a
// bad ICRC shows as exactly one bad frame).
func TestConformTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	net3 := [3]byte{127, byte(100 + rand.IntN(100)), byte(rand.IntN(256))}
	dut := netip.AddrFrom4([4]byte{net3[0], net3[1], net3[2], 2})
	tester := netip.AddrFrom4([4]byte{net3[0], net3[1], net3[2], 3})
	agent := start(t, "agent", "conform", "agent", "--addr", dut.String(), "--listen", "127.0.0.1:0")
	addr := agentAddr(t, agent)
	junit, pcap := filepath.Join(dir, "conform.xml"), filepath.Join(dir, "conform.pcap")
	run := start(t, "run", "conform", "run", "--agent", addr, "--udp", tester.String(), "--json",
		"--junit", junit, "--pcap", pcap)
	out := run.wait(t, 2*time.Minute)
	var rep conform.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("the JSON report: %v\n%s", err, out)
	}
	want := len(conform.Cases(conform.RoCE, ""))
	if s := rep.Summary; s.Cases != want || s.Pass != want || len(rep.Results) != want || rep.DUT.Kind != "rnic" {
		t.Fatalf("summary %+v (%d results, DUT %+v), want %d cases all passing\n%s", s, len(rep.Results), rep.DUT, want, out)
	}
	checkConformJUnit(t, junit, want)
	checkConformCapture(t, pcap, rep)
}

func checkConformJUnit(t *testing.T, path string, want int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Cases    []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("JUnit: %v", err)
	}
	if len(j.Suites) != 1 || j.Suites[0].Tests != want || j.Suites[0].Failures != 0 || len(j.Suites[0].Cases) != want {
		t.Fatalf("JUnit: %+v, want one suite of %d passing cases", j, want)
	}
}

// checkConformCapture: the capture's frame count is the highest frame
// number the evidence cites (every frame is in it, numbered as cited).
func checkConformCapture(t *testing.T, path string, rep conform.Report) {
	t.Helper()
	num := regexp.MustCompile(`#(\d+)[←→]`)
	last := 0
	for _, r := range rep.Results {
		for _, m := range num.FindAllStringSubmatch(r.Evidence, -1) {
			n, _ := strconv.Atoi(m[1])
			last = max(last, n)
		}
	}
	sum, err := decode.Run(io.Discard, []string{path}, decode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if frames := sum.RoCE + sum.Unknown; frames != last || sum.ICRCBad != 1 {
		t.Errorf("capture: %s; want %d frames (the evidence's last), 1 with a bad ICRC", sum.Line(), last)
	}
}

// TestConformUsage: the subcommand is required, bad flags are usage
// errors (exit 2), --list needs no agent.
func TestConformUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"conform"}, 2, "give a subcommand"},
		{[]string{"conform", "frob"}, 2, `no subcommand "frob"`},
		{[]string{"conform", "run"}, 2, "--agent"},
		{[]string{"conform", "run", "--agent", "127.0.0.1:1", "--transport", "ib"}, 2, "roce or iwarp"},
		{[]string{"conform", "run", "--agent", "127.0.0.1:1", "--slow", "0"}, 2, "--slow"},
		{[]string{"conform", "agent", "--addr", "nope"}, 2, "--addr"},
		{[]string{"conform", "run", "--list", "--only", "C9-105"}, 0, "C9-105/read-subrange"},
		{[]string{"conform", "run", "--agent", "127.0.0.1:1", "--only", "no-such-rule"}, 1, "no case matches"},
		{[]string{"conform", "--help"}, 0, "flags of agent"},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		all := out.String() + errb.String()
		if code != c.code || !strings.Contains(all, c.out) {
			t.Errorf("rnic %q: exit %d, want %d with %q:\n%s", c.args, code, c.code, c.out, all)
		}
	}
}

// TestConformTAP: the agent's NIC and the tester's port each on a TAP of
// one bridge, in a namespace of the test's own (root): the suite runs over
// real Ethernet frames, ARP included, and passes.
func TestConformTAP(t *testing.T) {
	tn := taptest.New(t, 79)
	agent := start(t, "agent", append([]string{"conform", "agent", "--listen", "127.0.0.1:0"},
		tapNIC{tap: "t-dut", addrs: []netip.Prefix{tn.Addr4(2)}}.flags(tn)...)...)
	addr := agentAddr(t, agent)
	pcap := filepath.Join(t.TempDir(), "conform-tap.pcap")
	run := start(t, "run", append([]string{"conform", "run", "--agent", addr, "--json", "--pcap", pcap,
		"--only", "in-order,C9-105,icrc,credits"}, tapNIC{tap: "t-tester", addrs: []netip.Prefix{tn.Addr4(3)}}.flags(tn)...)...)
	out := run.wait(t, 2*time.Minute)
	var rep conform.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("the JSON report: %v\n%s", err, out)
	}
	if s := rep.Summary; s.Cases < 7 || s.Pass != s.Cases {
		t.Fatalf("summary %+v\n%s\nagent: %s", s, out, agent.out.String())
	}
	checkConformCapture(t, pcap, rep)
}

// agentAddr waits for the agent to say where it listens.
func agentAddr(t *testing.T, agent *proc) string {
	t.Helper()
	listen := regexp.MustCompile(`listening on (\S+)`)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := listen.FindStringSubmatch(agent.out.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("the agent did not say where it listens:\n%s", agent.out.String())
	return ""
}
