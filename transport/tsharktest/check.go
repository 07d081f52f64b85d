package tsharktest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
)

// Options tunes Check and Fields.
type Options struct {
	// RoCEPort is the UDP port RoCEv2 frames use; 0 means 4791. For another
	// port, also pass "-o", "infiniband.rroce.port:N" in Args.
	RoCEPort int
	// RequireMPA fails the check on any TCP payload that tshark did not
	// dissect as iWARP MPA (for iWARP captures, which must hold the whole
	// connection from the SYN; README.md, "MPA").
	RequireMPA bool
	// Args are extra tshark arguments, placed after the common ones.
	Args []string
	// Filter, for Fields, is a display filter selecting the frames
	// returned; empty means every frame.
	Filter string
	// KernelChecksums is a display filter selecting the TCP segments whose
	// checksum a Linux kernel computed (e.g. what a TAP without checksum
	// offload receives from a peer that left the checksum to the kernel).
	// Linux writes a zero result as 0xFFFF (skb_checksum_help's
	// CSUM_MANGLED_0), the same number in ones' complement, and tshark
	// warns of it (RFC 1624): on these segments, and only on them, that
	// warning is no finding. Empty: no segment is excused.
	KernelChecksums string
}

// warnings is the display filter of frames with expert findings of
// severity warning or above, less those o excuses. TCP flow control is no
// fault: a receiver that reads slowly (a busy machine) fills the window,
// and Wireshark warns "Window Full" and "Zero Window" for what TCP is
// meant to do; such a frame passes, as does a kernel's 0xFFFF checksum
// (KernelChecksums). Every other frame's warnings still count.
func (o Options) warnings() string {
	return "_ws.expert.severity >= warning && !tcp.analysis.window_full && !tcp.analysis.zero_window" + o.excused()
}

// excused is the clause a warnings filter ends with to leave out the
// kernel's 0xFFFF checksums (KernelChecksums).
func (o Options) excused() string {
	if o.KernelChecksums == "" {
		return ""
	}
	return " && !(tcp.checksum.ffff && (" + o.KernelChecksums + "))"
}

// commonArgs are the arguments of every oracle run: two-pass (so MPA
// reassembly settles), no name resolution, every checksum checked, payload
// heuristics off.
func commonArgs(t testing.TB, pcap string, o Options) []string {
	t.Helper()
	args := []string{"-r", pcap, "-n", "-2",
		"-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE"}
	args = append(args, disableArgs(t)...)
	return append(args, o.Args...)
}

// query runs tshark over pcap with a display filter and returns one row of
// fields per matching frame: every occurrence of a field joined by ";" when
// all is set, else only the first.
func query(t testing.TB, pcap string, o Options, filter string, all bool, fields ...string) [][]string {
	t.Helper()
	args := commonArgs(t, pcap, o)
	if filter != "" {
		args = append(args, "-Y", filter)
	}
	args = append(args, "-T", "fields", "-E", "separator=/t", "-E", "quote=n")
	if all {
		args = append(args, "-E", "occurrence=a", "-E", "aggregator=;")
	} else {
		args = append(args, "-E", "occurrence=f")
	}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	var rows [][]string
	for _, l := range strings.Split(run(t, args...), "\n") {
		if l == "" {
			continue
		}
		row := strings.Split(l, "\t")
		for len(row) < len(fields) {
			row = append(row, "")
		}
		rows = append(rows, row)
	}
	return rows
}

// Check runs the oracle over pcap and reports every offending frame with
// t.Errorf. It skips the test when tshark is missing.
func Check(t testing.TB, pcap string, o Options) {
	t.Helper()
	port := o.RoCEPort
	if port == 0 {
		port = 4791
	}
	checks := []struct{ what, filter string }{
		{"malformed", "_ws.malformed"},
		{"expert info >= warning", o.warnings()},
		{"RoCEv2 port but not dissected as InfiniBand BTH", fmt.Sprintf("udp.port==%d && !infiniband.bth", port)},
	}
	if o.RequireMPA {
		checks = append(checks, struct{ what, filter string }{
			"TCP payload not dissected as MPA", "tcp.len > 0 && !iwarp_mpa && !tcp.reassembled_in"})
	}
	for _, c := range checks {
		for _, r := range query(t, pcap, o, c.filter, true, "frame.number", "_ws.col.Protocol", "_ws.col.Info", "_ws.expert.message") {
			t.Errorf("tshark: %s: frame %s: %s %s [expert: %s]", c.what, r[0], r[1], r[2], r[3])
		}
	}
	for _, n := range badMPACRC(t, pcap, o) {
		t.Errorf("tshark: Bad CRC32 in MPA FPDU: frame %d", n)
	}
}

// badMPACRC returns the frames whose MPA CRC tshark labels "Bad CRC32". The
// verdict is only in the label text (README.md, "MPA"), hence -V.
func badMPACRC(t testing.TB, pcap string, o Options) []int {
	t.Helper()
	args := append(commonArgs(t, pcap, o), "-V", "-Y", "iwarp_mpa.crc_check")
	var bad []int
	frame := 0
	for _, l := range strings.Split(run(t, args...), "\n") {
		if rest, ok := strings.CutPrefix(l, "Frame "); ok {
			num, _, _ := strings.Cut(rest, ":")
			frame, _ = strconv.Atoi(num)
			continue
		}
		if strings.Contains(l, "Bad CRC32") && (len(bad) == 0 || bad[len(bad)-1] != frame) {
			bad = append(bad, frame)
		}
	}
	return bad
}

// Row is one frame's fields: field name to its first occurrence's value
// (as tshark prints it with -T fields), "" when absent.
type Row map[string]string

// Fields returns the given fields for every frame of pcap (or those
// matching o.Filter), in file order. The field "frame.number" is always
// included.
func Fields(t testing.TB, pcap string, o Options, fields ...string) []Row {
	t.Helper()
	all := append([]string{"frame.number"}, fields...)
	var out []Row
	for _, r := range query(t, pcap, o, o.Filter, false, all...) {
		row := Row{}
		for i, f := range all {
			row[f] = r[i]
		}
		out = append(out, row)
	}
	return out
}

// Int parses a numeric field as tshark prints it: decimal, or hex with a
// 0x prefix (e.g. infiniband.bth.destqp); ok is false for an absent or
// unparsable value.
func (r Row) Int(field string) (v uint64, ok bool) {
	s := r[field]
	if s == "" {
		return 0, false
	}
	var err error
	if h, isHex := strings.CutPrefix(s, "0x"); isHex {
		v, err = strconv.ParseUint(h, 16, 64)
	} else {
		v, err = strconv.ParseUint(s, 10, 64)
	}
	return v, err == nil
}

// Bytes parses a byte-string field as tshark prints it, as one big-endian
// number (e.g. infiniband.immdt "deadbeef"); ok is false for an absent or
// unparsable value or one longer than 8 bytes.
func (r Row) Bytes(field string) (v uint64, ok bool) {
	s := strings.ReplaceAll(r[field], ":", "")
	if s == "" || len(s) > 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 64)
	return v, err == nil
}

// captureInfo is the pcap record header WritePcap gives frame i.
func captureInfo(i, n int) gopacket.CaptureInfo {
	return gopacket.CaptureInfo{
		Timestamp:     time.Unix(1700000000, 0).Add(time.Duration(i) * time.Millisecond),
		CaptureLength: n, Length: n,
	}
}

// Finding is one frame tshark objects to: malformed, or with expert
// messages of severity warning or above (Messages, notes left out).
type Finding struct {
	Frame     int
	Malformed bool
	Messages  []string
}

// severityWarning is _ws.expert.severity's value for a warning
// (PI_WARN); errors are above it.
const severityWarning = 0x00600000

// Findings returns every frame of pcap that Check would report, for a
// caller that excuses some of them itself (frames a link's faults
// corrupted on purpose, TCP's recovery from loss).
func Findings(t testing.TB, pcap string, o Options) []Finding {
	t.Helper()
	var out []Finding
	rows := query(t, pcap, o, "_ws.malformed || _ws.expert.severity >= warning"+o.excused(), true,
		"frame.number", "_ws.malformed", "_ws.expert.message", "_ws.expert.severity")
	for _, r := range rows {
		f := Finding{Malformed: r[1] != ""}
		f.Frame, _ = strconv.Atoi(r[0])
		msgs, sevs := strings.Split(r[2], ";"), strings.Split(r[3], ";")
		for i, m := range msgs {
			sev := int64(0)
			if i < len(sevs) {
				sev, _ = strconv.ParseInt(sevs[i], 0, 64)
			}
			if m != "" && sev >= severityWarning {
				f.Messages = append(f.Messages, m)
			}
		}
		out = append(out, f)
	}
	return out
}
