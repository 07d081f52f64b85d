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
	"os"
	"strings"
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

// faultFinding is one tshark finding in a fault row's capture, with the
// address of the frame's sender.
type faultFinding struct {
	OracleFinding
	Src string
}

// RunFaultOracle is RunOracle for a fault row: the findings, each with
// its sender, TCP analysis left out.
func RunFaultOracle(ctx context.Context, pcap string) ([]faultFinding, error) {
	args := append(tsharkArgs(pcap), "-Y", "_ws.malformed || _ws.expert.severity >= warning",
		"-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
		"-e", "frame.number", "-e", "_ws.malformed", "-e", "_ws.expert.message", "-e", "_ws.expert.severity", "-e", "ip.src")
	out, err := runTshark(ctx, args)
	if err != nil {
		return nil, err
	}
	fs := parseFaultOracle(out)
	und, err := runTshark(ctx, append(tsharkArgs(pcap), "-Y", "udp.port==4791 && !infiniband.bth", "-T", "fields", "-e", "frame.number", "-e", "ip.src"))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(strings.TrimSpace(und), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			fs = append(fs, faultFinding{OracleFinding{f[0], "RoCEv2 frame not dissected"}, f[1]})
		}
	}
	return fs, nil
}

// parseFaultOracle is ParseOracle over tshark's fields with the
// sender's address last; TCP analysis findings are left out.
func parseFaultOracle(out string) []faultFinding {
	src := map[string]string{}
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\t")
		if len(f) == 5 {
			src[f[0]] = f[4]
			line = strings.Join(f[:4], "\t")
		}
		lines = append(lines, line)
	}
	var fs []faultFinding
	for _, f := range ParseOracle(strings.Join(lines, "\n")) {
		if !isTCPAnalysis(f.Message) {
			fs = append(fs, faultFinding{f, src[f.Frame]})
		}
	}
	return fs
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
func (rn *Runner) checkFault(ctx context.Context, g *Guest, f *Fault, pcap string, res *Result) []string {
	if _, err := os.Stat(pcap); err != nil {
		return []string{"no capture"}
	}
	var why []string
	ws, err := CountWireFile(ctx, pcap, g)
	if err != nil {
		why = append(why, err.Error())
	}
	res.Wire = &ws
	res.Packets, res.Retrans = ws.Rnic.Frames+ws.Peer.Frames, ws.Rnic.Retrans
	if ws.Rnic.Bad > 0 {
		why = append(why, fmt.Sprintf("rnic sent %d bad frames", ws.Rnic.Bad))
	}
	if ws.Peer.Bad > 0 && !f.Corrupts {
		why = append(why, fmt.Sprintf("%d bad frames from the guest, and netem corrupts nothing", ws.Peer.Bad))
	}
	if g.IWARP && !f.Corrupts {
		// The decoder reassembles both MPA streams; only corruption may
		// leave a CRC or an FPDU it cannot read.
		out, _ := runOut(ctx, rn.Rnic, "decode", pcap)
		os.WriteFile(strings.TrimSuffix(pcap, ".pcap")+".decode.txt", []byte(out), 0o644)
		if sum, err := ParseDecodeSummary(out); err != nil {
			why = append(why, "rnic decode: "+err.Error())
		} else if p := sum.Problem(true); p != "" {
			why = append(why, "decode: "+p)
		}
	}
	fs, err := RunFaultOracle(ctx, pcap)
	if err != nil {
		return append(why, "tshark: "+err.Error())
	}
	for _, x := range fs {
		if x.Src == g.Addr && f.Corrupts {
			res.PeerFindings++
			continue
		}
		why = append(why, fmt.Sprintf("tshark: frame %s from %s: %s", x.Frame, x.Src, x.Message))
		if len(why) > 3 {
			break
		}
	}
	return why
}
