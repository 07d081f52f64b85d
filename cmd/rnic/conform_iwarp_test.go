package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform"
	"github.com/rnic/rnic/transport/pcap"
)

// TestConformIWARPTwoProcesses: the iWARP suite as the README shows it,
// an agent whose NIC speaks iWARP and the tester, two processes on
// loopback: the JSON report parses, every case passes against rnic, the
// JUnit file has one testcase per case, and every frame the evidence
// cites is a data segment of the capture.
func TestConformIWARPTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	net3 := [3]byte{127, byte(100 + rand.IntN(100)), byte(rand.IntN(256))}
	dut := netip.AddrFrom4([4]byte{net3[0], net3[1], net3[2], 2})
	tester := netip.AddrFrom4([4]byte{net3[0], net3[1], net3[2], 3})
	agent := start(t, "agent", "conform", "agent", "--addr", dut.String(), "--transport", "iwarp", "--listen", "127.0.0.1:0")
	addr := agentAddr(t, agent)
	junit, capture := filepath.Join(dir, "iwarp.xml"), filepath.Join(dir, "iwarp.pcap")
	run := start(t, "run", "conform", "run", "--agent", addr, "--udp", tester.String(), "--transport", "iwarp",
		"--json", "--junit", junit, "--pcap", capture)
	out := run.wait(t, 2*time.Minute)
	var rep conform.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("the JSON report: %v\n%s", err, out)
	}
	want := len(conform.Cases(conform.IWARP, ""))
	if s := rep.Summary; want < 30 || s.Cases != want || s.Pass != want || rep.DUT.Transport != "iwarp" {
		t.Fatalf("summary %+v (DUT %+v), want %d iWARP cases all passing\n%s", s, rep.DUT, want, out)
	}
	checkConformJUnit(t, junit, want)
	frames, err := pcap.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	num := regexp.MustCompile(`#(\d+)[←→]`)
	for _, r := range rep.Results {
		for _, m := range num.FindAllStringSubmatch(r.Evidence, -1) {
			n, _ := strconv.Atoi(m[1])
			if n < 1 || n > len(frames) || tcpPayload(frames[n-1].Data) == 0 {
				t.Errorf("%s: the evidence cites frame %d, not a data segment of the %d-frame capture", r.ID, n, len(frames))
			}
		}
	}
}

// TestConformIWARPUsage: the agent's --transport is checked.
func TestConformIWARPUsage(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"conform", "agent", "--transport", "ib"}, &out, &errb)
	if all := out.String() + errb.String(); code != 2 || !strings.Contains(all, "roce or iwarp") {
		t.Errorf("rnic conform agent --transport ib: exit %d, want 2 naming roce or iwarp:\n%s", code, all)
	}
}

// tcpPayload is the TCP payload length of an Ethernet/IPv4/TCP frame (0
// for anything else).
func tcpPayload(f []byte) int {
	if len(f) < 14+20+20 || f[12] != 0x08 || f[13] != 0x00 || f[23] != 6 {
		return 0
	}
	ihl := int(f[14]&0x0F) * 4
	total := int(binary.BigEndian.Uint16(f[16:]))
	if len(f) < 14+ihl+13 {
		return 0
	}
	return total - ihl - int(f[14+ihl+12]>>4)*4
}
