// The checks over one row's capture: rnic decode (every ICRC and MPA CRC
// right, nothing it cannot name), the tshark oracle (no malformed frame,
// no expert finding of warning or worse beyond the ones real rxe/siw
// captures have too), and the retransmission count (RoCEv2: counted here
// over the frames; iWARP: tshark's tcp.analysis.retransmission).
// The tshark switches are those that decode real rxe and siw captures
// completely (lab/README.md, "Reading the captures").

package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// DecodeSummary is rnic decode's summary line.
type DecodeSummary struct {
	Frames, RoCE, ICRCBad, IWARP, CRCBad, Unknown int
}

var summaryRE = regexp.MustCompile(`(?m)^summary: frames=(\d+) roce=(\d+) icrc_bad=(\d+) iwarp=(\d+) crc_bad=(\d+) unknown=(\d+)`)

// ParseDecodeSummary finds the summary line in rnic decode's output.
func ParseDecodeSummary(out string) (DecodeSummary, error) {
	m := summaryRE.FindStringSubmatch(out)
	if m == nil {
		return DecodeSummary{}, fmt.Errorf("no summary line in rnic decode's output")
	}
	var v [6]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return DecodeSummary{v[0], v[1], v[2], v[3], v[4], v[5]}, nil
}

// Problem is the summary's verdict: empty when every frame is sound.
func (s DecodeSummary) Problem(iwarp bool) string {
	var p []string
	if s.ICRCBad > 0 {
		p = append(p, fmt.Sprintf("%d bad ICRC", s.ICRCBad))
	}
	if s.CRCBad > 0 {
		p = append(p, fmt.Sprintf("%d bad MPA CRC", s.CRCBad))
	}
	if s.Unknown > 0 {
		p = append(p, fmt.Sprintf("%d unknown", s.Unknown))
	}
	if iwarp && s.IWARP == 0 || !iwarp && s.RoCE == 0 {
		p = append(p, "no RDMA frames")
	}
	return strings.Join(p, ", ")
}

// tsharkHeuristicsOff are Wireshark's heuristics for protocols carried
// over RDMA: they claim perftest's and rping's small SENDs and report
// false "Malformed Packet: RPCoRDMA".
var tsharkHeuristicsOff = []string{"rpcrdma_infiniband", "smb_direct_infiniband", "iser_infiniband",
	"nvme_rdma", "lnet_ib", "fc_infiniband", "sdp_infiniband", "smcr_infiniband", "mellanox_eoib",
	"eth_over_ib", "rpcrdma_iwarp", "smb_direct_iwarp"}

// tsharkArgs are the oracle's switches for a capture.
func tsharkArgs(pcap string) []string {
	a := []string{"-r", pcap, "-n", "--enable-heuristic", "iwarp_mpa_tcp", "-o", "tcp.desegment_tcp_streams:TRUE"}
	for _, h := range tsharkHeuristicsOff {
		a = append(a, "--disable-heuristic", h)
	}
	return a
}

// benignExpert are expert findings (≥ warning) that real guest-to-guest
// captures have as well (lab/README.md): perftest closes its TCP side
// channel with a RST, and Wireshark 4.0 checks MPA requests against
// revision 1 while siw speaks revision 2 (RFC 6581). And TCP's own
// recovery and flow control (a duplicate SACK after a retransmission, a
// full or zero window): a drop-in program's side channel is the kernel's
// TCP, on the wire through its NIC's host port, and on a loaded machine
// it retransmits as TCP does (a row failed on a D-SACK with both cores
// busy); what rnic puts on the wire itself is checked apart.
var benignExpert = []string{
	"Connection reset (RST)",
	"Res field is NOT set to zero",
	"Rev field is NOT set to one",
	"D-SACK Sequence",
	"TCP window specified by the receiver is now completely full",
	"TCP Zero Window segment",
}

// OracleFinding is one frame tshark objects to.
type OracleFinding struct {
	Frame   string
	Message string
}

// ParseOracle reads tshark's fields output (frame number, malformed
// marker, expert messages, expert severities; tab separated, occurrences
// separated by "|") and returns the findings that are not benign.
func ParseOracle(out string) []OracleFinding {
	var fs []OracleFinding
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "\t")
		for len(f) < 4 {
			f = append(f, "")
		}
		if f[1] != "" {
			fs = append(fs, OracleFinding{f[0], "malformed: " + f[2]})
			continue
		}
		msgs, sevs := splitOcc(f[2]), splitOcc(f[3])
		for i, m := range msgs {
			sev := 0
			if i < len(sevs) {
				sev, _ = strconv.Atoi(sevs[i])
			}
			if sev < severityWarn || isBenign(m) {
				continue
			}
			fs = append(fs, OracleFinding{f[0], m})
		}
	}
	return fs
}

// severityWarn is PI_WARN, the value of _ws.expert.severity for warnings.
const severityWarn = 0x00600000

func splitOcc(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "|")
}

func isBenign(msg string) bool {
	for _, b := range benignExpert {
		if strings.Contains(msg, b) {
			return true
		}
	}
	return false
}

// RunOracle runs tshark over pcap and returns its findings, or an error
// when tshark cannot run.
func RunOracle(ctx context.Context, pcap string) ([]OracleFinding, error) {
	args := append(tsharkArgs(pcap), "-Y", "_ws.malformed || _ws.expert.severity >= warning",
		"-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
		"-e", "frame.number", "-e", "_ws.malformed", "-e", "_ws.expert.message", "-e", "_ws.expert.severity")
	out, err := runTshark(ctx, args)
	if err != nil {
		return nil, err
	}
	fs := ParseOracle(out)
	// RoCEv2 frames the dissector did not take.
	und, err := runTshark(ctx, append(tsharkArgs(pcap), "-Y", "udp.port==4791 && !infiniband.bth", "-T", "fields", "-e", "frame.number"))
	if err != nil {
		return nil, err
	}
	for _, n := range strings.Fields(und) {
		fs = append(fs, OracleFinding{n, "RoCEv2 frame not dissected"})
	}
	return fs, nil
}

// CountTCPRetransmissions is tshark's count of TCP retransmissions.
func CountTCPRetransmissions(ctx context.Context, pcap string) (int, error) {
	out, err := runTshark(ctx, append(tsharkArgs(pcap), "-Y", "tcp.analysis.retransmission", "-T", "fields", "-e", "frame.number"))
	if err != nil {
		return 0, err
	}
	return len(strings.Fields(out)), nil
}

func runTshark(ctx context.Context, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, "tshark", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("tshark: %w: %s", err, lastLine(errb.String()))
	}
	return out.String(), nil
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
