// Seeded faults on the NIC's TAP (Config.Faults): the wire between the
// host stack and the TAP loses, duplicates, corrupts, reorders or delays
// frames (tap.FaultIO), and the NIC reports what was injected beside what
// its engines did about it (retransmissions, timeouts, checksum drops).

package tapnic

import (
	"fmt"
	"io"
	"strings"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/tap"
	"github.com/rnic/rnic/transport"
)

// openFaults wraps dev in the faults of cfg, taking the capture over from
// the Host (the faults record what crosses the wire, with notes), and
// says so on cfg.FaultLog with the seed.
func openFaults(cfg *Config, dev *tap.Device) (*tap.FaultIO, error) {
	var rec transport.FrameRecorder
	if cfg.Pcap != nil {
		rec = cfg.Pcap
	}
	var fc transport.FaultConfig
	if cfg.Faults != nil {
		fc = cfg.Faults.Config()
	}
	fc.Script = cfg.Script
	fio, err := tap.NewFaultIO(dev, fc, rec)
	if err != nil {
		return nil, err
	}
	if cfg.FaultLog != nil && cfg.Faults != nil {
		fmt.Fprintf(cfg.FaultLog, "%s: faults on TAP %s: %s (replay: --faults %s)\n", cfg.Name, cfg.TAP,
			cfg.Faults, cfg.Faults)
	}
	return fio, nil
}

// faulty reports whether the wire takes faults: seeded, scripted or both.
func (cfg *Config) faulty() bool { return cfg.Faults != nil || cfg.Script != nil }

// FaultCounters are the faults injected so far, each direction's (tx: the
// frames the NIC sent, rx: those it received), as port counters; none
// without faults.
func (n *NIC) FaultCounters() []ibv.Counter {
	if n.faults == nil {
		return nil
	}
	// Frames the faults let through that the host stack did not read in
	// time: a loss the spec did not ask for, so it is shown too.
	return append(embedded.FaultCounters(n.faults.Stats),
		ibv.Counter{Name: "fault_rx_queue_drops", Value: n.faults.Overflow()})
}

// reportCounters are the engine and stack counters a fault report shows
// beside the injected ones: what the NIC did about the faults.
var reportCounters = []string{"retransmitted_pkts", "retransmit_timeouts", "out_of_sequence", "duplicate_request",
	"icrc_err", "retry_exceeded_err"}

// FaultReport is one line saying what the faults injected and what the NIC
// did about them ("" without faults); a tool prints it when its run ends.
func (n *NIC) FaultReport() string {
	if n.faults == nil {
		return ""
	}
	return faultReport(n.Name(), n.faultSpec, append(n.FaultCounters(), n.reactionCounters()...))
}

// faultReport formats a report from counters, those that are not zero.
func faultReport(name string, spec transport.FaultSpec, counters []ibv.Counter) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: faults %s:", name, spec)
	for _, c := range counters {
		if c.Value != 0 {
			fmt.Fprintf(&b, " %s %d", c.Name, c.Value)
		}
	}
	return b.String()
}

// reactionCounters are the RoCE engine's port counters of reportCounters,
// the host stack's refusals (an IPv4 header checksum, headers that do not
// add up), and the NIC's TCP's (iWARP, side channels): its
// retransmissions and timeouts, and the segments its checksums refused.
func (n *NIC) reactionCounters() []ibv.Counter {
	want := map[string]bool{}
	for _, k := range reportCounters {
		want[k] = true
	}
	var out []ibv.Counter
	for _, c := range n.PortCounters() {
		if want[c.Name] {
			out = append(out, c)
		}
	}
	st := n.tcp.Stack().Stats()
	hc := n.host.Counters()
	return append(out,
		ibv.Counter{Name: "host_bad_checksum", Value: hc.BadChecksum},
		ibv.Counter{Name: "host_malformed", Value: hc.Malformed},
		ibv.Counter{Name: "tcp_retransmits", Value: st.TCP.Retransmits.Value()},
		ibv.Counter{Name: "tcp_timeouts", Value: st.TCP.Timeouts.Value()},
		ibv.Counter{Name: "tcp_checksum_errors", Value: st.TCP.ChecksumErrors.Value()},
		ibv.Counter{Name: "ip_malformed", Value: st.IP.MalformedPacketsReceived.Value()})
}

// logFaultReport writes the report to w, if any.
func (n *NIC) logFaultReport(w io.Writer) {
	if w != nil && n.faults != nil {
		fmt.Fprintln(w, n.FaultReport())
	}
}
