// The report: perftest's header, address lines and result table, with its
// column layout (REPORT_FMT, REPORT_FMT_LAT), then the raw UDP line; or one
// JSON object.

package perf

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// resultLine is perftest's RESULT_LINE.
const resultLine = "---------------------------------------------------------------------------------------\n"

// Table heads, perftest's RESULT_FMT and RESULT_FMT_LAT.
const (
	bwHead  = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
	latHead = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"
)

// writeReport prints res as text or JSON. server says the report is
// printed by the server, whose local address is the server's.
func writeReport(w io.Writer, asJSON bool, res *Result, server bool) error {
	if asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("perf: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var b strings.Builder
	writeHeader(&b, res, server)
	b.WriteString(resultLine)
	if res.BW != nil {
		b.WriteString(bwHead)
		b.WriteString(bwRow(res.Size, res.Iters, res.BW))
	}
	if res.Lat != nil {
		b.WriteString(latHead)
		b.WriteString(latRow(res.Size, res.Iters, res.Lat))
	}
	b.WriteString(resultLine)
	if res.BW != nil && res.QPs > 1 {
		fmt.Fprintf(&b, "qps: %d of %d completed all their operations; connected in %.3f s\n",
			res.BW.QPsDone, res.QPs, res.ConnectSeconds)
	}
	if res.Check.Skipped != "" {
		fmt.Fprintf(&b, "data check: skipped: %s\n", res.Check.Skipped)
	}
	b.WriteString(rawLine(res))
	_, err := io.WriteString(w, b.String())
	return err
}

// bwRow is a bandwidth table row, perftest's REPORT_FMT.
func bwRow(size, iters int, s *BWStats) string {
	return fmt.Sprintf(" %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n",
		size, iters, s.PeakMBps, s.AvgMBps, s.MsgRateMpps)
}

// latRow is a latency table row, perftest's REPORT_FMT_LAT.
func latRow(size, iters int, l *LatStats) string {
	return fmt.Sprintf(" %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
		size, iters, l.Min, l.Max, l.Typical, l.Avg, l.Stdev, l.P99, l.P999)
}

// rawLine is the last line: the raw UDP figure and rnic's ratio to it.
func rawLine(res *Result) string {
	r := res.Raw
	if res.RawSkipped != "" {
		return fmt.Sprintf("raw baseline: skipped in %s\n", res.RawSkipped)
	}
	if res.IWARP {
		return rawTCPLine(res)
	}
	switch {
	case res.RawError != "":
		return fmt.Sprintf("raw udp: not measured: %s\n", res.RawError)
	case r == nil:
		return ""
	case r.Lat != nil:
		return fmt.Sprintf("raw udp: t_typical %.2f usec, rnic/raw = %.2f (%d round trips of %d-byte datagrams)\n",
			r.Lat.Typical, r.Ratio, r.Lat.Samples, r.Datagram)
	}
	return fmt.Sprintf("raw udp: %.2f MB/sec, rnic/raw = %.2f (%d of %d %d-byte datagrams arrived)\n",
		r.MBps, r.Ratio, r.Received, r.Sent, r.Datagram)
}

// title is perftest's test name line.
func title(res *Result) string {
	var op string
	switch res.Op {
	case OpWrite:
		op = "RDMA_Write"
	case OpRead:
		op = "RDMA_Read"
	case OpSend:
		op = "Send"
	case OpAtomic:
		op = "Atomic " + string(res.AtomicType)
	}
	if res.Mode == ModeLat {
		return op + " Latency Test"
	}
	return op + " BW Test"
}

// writeHeader prints perftest's parameter block and address lines.
func writeHeader(b *strings.Builder, res *Result, server bool) {
	b.WriteString(resultLine)
	fmt.Fprintf(b, "                    %s\n", title(res))
	transport := "IB"
	if res.IWARP {
		transport = "IW"
	}
	fmt.Fprintf(b, " Number of qps   : %d\t\tTransport type : %s\n", res.QPs, transport)
	conn := "RC"
	if res.UD {
		conn = "UD"
	}
	fmt.Fprintf(b, " Connection type : %s\t\tUsing SRQ      : OFF\n", conn)
	if !server {
		depth := res.TxDepth
		if res.Mode == ModeLat {
			depth = 1 // one operation at a time
		}
		fmt.Fprintf(b, " TX depth        : %d\n", depth)
	}
	if res.Mode == ModeBW {
		fmt.Fprintf(b, " CQ Moderation   : %d\n", res.CQMod)
	}
	fmt.Fprintf(b, " Mtu             : %d[B]\n", res.MTU)
	b.WriteString(" Link type       : Ethernet\n")
	fmt.Fprintf(b, " GID index       : %d\n", res.GIDIndex)
	if res.Op == OpRead || res.Op == OpAtomic {
		fmt.Fprintf(b, " Outstand reads  : %d\n", maxOutReads)
	} else {
		b.WriteString(" Max inline data : 0[B]\n")
	}
	if res.IWARP || res.RDMACM {
		b.WriteString(" rdma_cm QPs\t : ON\n") // rdma_cm, or the iWARP connection manager
	} else {
		b.WriteString(" rdma_cm QPs\t : OFF\n")
	}
	if res.RDMACM {
		b.WriteString(" Data ex. method : rdma_cm\n")
	} else {
		b.WriteString(" Data ex. method : Ethernet\n")
	}
	b.WriteString(resultLine)
	local, remote := res.Client, res.Server
	if server {
		local, remote = remote, local
	}
	for _, k := range local {
		writeAddr(b, "local", k, res.Op)
	}
	for _, k := range remote {
		writeAddr(b, "remote", k, res.Op)
	}
}

// writeAddr prints one QP's address as perftest's ctx_print_pingpong_data:
// " local address: LID 0000 QPN 0x0014 PSN 0x147ede RKey 0x000544 VAddr
// 0x005583d975a000", then the GID in decimal bytes.
func writeAddr(b *strings.Builder, which string, k Key, op Op) {
	fmt.Fprintf(b, " %s address: LID %s QPN %s PSN %s", which, cHex(uint64(k.LID), 4), cHex(uint64(k.QPN), 6), cHex(uint64(k.PSN), 6))
	if op == OpRead {
		fmt.Fprintf(b, " OUT %s", cHex(uint64(k.OutReads), 4))
	}
	if op != OpSend && op != OpAtomic {
		fmt.Fprintf(b, " RKey %s VAddr %s", cHex(uint64(k.RKey), 8), cHex(k.VAddr, 16))
	}
	b.WriteString("\n GID: ")
	for i, g := range k.GID {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(b, "%02d", g)
	}
	b.WriteByte('\n')
}

// cHex formats v as C's printf("%#0<width>x"): the "0x" prefix counts in
// the width, and zero is printed without it.
func cHex(v uint64, width int) string {
	h := strconv.FormatUint(v, 16)
	if v == 0 {
		return strings.Repeat("0", max(width, 1))
	}
	if pad := width - 2 - len(h); pad > 0 {
		h = strings.Repeat("0", pad) + h
	}
	return "0x" + h
}
