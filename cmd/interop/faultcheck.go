// The capture checks of a fault row. What rnic sent is held to the
// clean-wire standard: every ICRC right, every frame decodable, no
// tshark finding. What the guest sent went through netem: under
// corruption its damaged frames are expected and counted, and TCP's
// loss recovery is tshark's news on both sides (a gap, an out-of-order
// segment, a retransmission), not a defect.

package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/rnic/rnic/transport/pcap"
)

// tcpAnalysisExpert are tshark's TCP analysis findings (warning or
// above) that a lossy, reordering or duplicating wire causes by itself.
var tcpAnalysisExpert = []string{
	"Previous segment(s) not captured",
	"ACKed segment that wasn't captured",
	"out-of-order segment",
	"retransmission",
	"Duplicate ACK",
}

// onesComplementZero is tshark's complaint about a TCP checksum sent as
// 0xffff where it computes 0x0000: the two are the same number in ones'
// complement (RFC 1624), and a receiver that sums the segment accepts
// either. Linux sends 0xffff now and then; it is no bad checksum.
const onesComplementZero = "see RFC 1624"

// faultFinding is one tshark finding in a fault row's capture, with the
// address of the frame's sender.
type faultFinding struct {
	OracleFinding
	Src string
}

// faultFields are the fields of the one tshark pass over a fault row's
// capture, in this order, every frame: its findings, its sender, its
// checksums' status (0: bad), whether a RoCEv2 frame was dissected, and
// the note rnic's own fault injection left on it.
var faultFields = []string{"frame.number", "_ws.malformed", "_ws.expert.message", "_ws.expert.severity",
	"ip.src", "tcp.checksum.status", "ip.checksum.status", "udp.dstport", "infiniband.bth.opcode", "frame.comment"}

// tsharkPass is what the pass found: the findings (TCP analysis left
// out), and by sender the TCP retransmissions and the frames with a bad
// TCP or IPv4 checksum.
type tsharkPass struct {
	Findings       []faultFinding
	Retrans, BadCk map[string]int
}

// RunFaultTshark runs the pass over pcap, checksums checked.
func RunFaultTshark(ctx context.Context, pcap string) (tsharkPass, error) {
	args := append(tsharkArgs(pcap), "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
		"-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|")
	for _, f := range faultFields {
		args = append(args, "-e", f)
	}
	out, err := runTshark(ctx, args)
	if err != nil {
		return tsharkPass{}, err
	}
	return parseFaultTshark(out), nil
}

// parseFaultTshark reads the pass's output. A frame rnic's faults
// corrupted ("rnic: corrupted") is no finding: rnic sent it damaged on
// purpose, and the far side must drop it.
func parseFaultTshark(out string) tsharkPass {
	p := tsharkPass{Retrans: map[string]int{}, BadCk: map[string]int{}}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\t")
		if len(f) < len(faultFields) {
			continue
		}
		frame, src, note := f[0], f[4], f[9]
		if strings.Contains(f[2], "retransmission") {
			p.Retrans[src]++
		}
		if strings.Contains(note, injectedCorrupt) {
			continue
		}
		if (f[5] == "0" || f[6] == "0") && !strings.Contains(f[2], onesComplementZero) {
			p.BadCk[src]++
		}
		for _, x := range ParseOracle(strings.Join(f[:4], "\t")) {
			if !isTCPAnalysis(x.Message) && !strings.Contains(x.Message, onesComplementZero) {
				p.Findings = append(p.Findings, faultFinding{x, src})
			}
		}
		if slices.Contains(strings.Split(f[7], "|"), "4791") && f[8] == "" {
			p.Findings = append(p.Findings, faultFinding{OracleFinding{frame, "RoCEv2 frame not dissected"}, src})
		}
	}
	return p
}

func isTCPAnalysis(msg string) bool {
	for _, s := range tcpAnalysisExpert {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// checkFault runs a fault row's capture checks and fills res's counts;
// it returns the problems found.
func (rn *Runner) checkFault(ctx context.Context, row Row, g *Guest, pcapPath string, res *Result) []string {
	frames, err := pcap.ReadFile(pcapPath)
	if err != nil {
		return []string{"capture: " + err.Error()}
	}
	f := row.Fault
	corrupts := f.Corrupts // bad frames from the guest are expected
	ws := CountWire(frames, netip.MustParseAddr(g.RnicIP), netip.MustParseAddr(g.Addr))
	pass, err := RunFaultTshark(ctx, pcapPath)
	var why []string
	if err != nil {
		why = append(why, "tshark: "+err.Error())
	}
	if g.IWARP {
		ws.Rnic.Retrans, ws.Peer.Retrans = pass.Retrans[g.RnicIP], pass.Retrans[g.Addr]
		ws.Rnic.Bad, ws.Peer.Bad = pass.BadCk[g.RnicIP], pass.BadCk[g.Addr]
	}
	res.Wire = &ws
	res.Packets, res.Retrans = ws.Rnic.Frames+ws.Peer.Frames, ws.Rnic.Retrans
	if ws.Rnic.Bad > 0 {
		why = append(why, fmt.Sprintf("rnic sent %d bad frames its faults did not corrupt", ws.Rnic.Bad))
	}
	if ws.Peer.Bad > 0 && !corrupts {
		why = append(why, fmt.Sprintf("%d bad frames from the guest, and netem corrupts nothing", ws.Peer.Bad))
	}
	if g.IWARP && !corrupts && !(row.RnicFaults && f.Corrupts) {
		why = append(why, rn.decodeIWARP(ctx, pcapPath)...)
	}
	for _, x := range pass.Findings {
		if x.Src == g.Addr && corrupts {
			res.PeerFindings++
			continue
		}
		if len(why) < 4 {
			why = append(why, fmt.Sprintf("tshark: frame %s from %s: %s", x.Frame, x.Src, x.Message))
		}
	}
	return why
}

// decodeIWARP checks that rnic decode reassembles both MPA streams of an
// iWARP capture: only corruption may leave a CRC or an FPDU it cannot
// read.
func (rn *Runner) decodeIWARP(ctx context.Context, pcapPath string) []string {
	out, _ := runOut(ctx, rn.Rnic, "decode", pcapPath)
	os.WriteFile(strings.TrimSuffix(strings.TrimSuffix(pcapPath, ".pcapng"), ".pcap")+".decode.txt", []byte(out), 0o644)
	sum, err := ParseDecodeSummary(out)
	switch {
	case err != nil:
		return []string{"rnic decode: " + err.Error()}
	case sum.Problem(true) != "":
		return []string{"decode: " + sum.Problem(true)}
	}
	return nil
}
