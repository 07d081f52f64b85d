// The TAP form of a RoCEv2 scenario (rnic lab run NAME --tap): the same
// steps between two TAP-mode NICs on a bridge in a network namespace the
// run creates and deletes, the scenario's script applied to rnic0's wire,
// on the real clock. Timing differs from run to run, so its output is
// not a golden one; its verdicts (which NAKs, retries and completion
// statuses appear) are the simulated form's.

package scenario

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/transport"
)

// ErrNoTAP is wrapped by RunTAP's refusals: not root, no /dev/net/tun, no
// ip command.
var ErrNoTAP = errors.New("the TAP form needs root (CAP_NET_ADMIN), /dev/net/tun and the ip command")

// RunTAP runs the scenario on two TAP-mode NICs (see the file comment).
// The iWARP scenarios have no TAP form: their scripts act on the simulated
// TCP network, not on frames.
func (sc *Scenario) RunTAP() (*Run, error) {
	if sc.iwarp {
		return nil, fmt.Errorf("%s has no TAP form: the iWARP scenarios script the simulated TCP network, not frames on a wire", sc.Name)
	}
	if err := tapUsable(); err != nil {
		return nil, err
	}
	return sc.runOn(stageConfig{tap: true})
}

// tapUsable says why TAP NICs cannot be made here, if they cannot.
func tapUsable() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root", ErrNoTAP)
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("%w: %v", ErrNoTAP, err)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: %v", ErrNoTAP, err)
	}
	return nil
}

// labBridge is the bridge in the run's namespace both TAPs are on.
const labBridge = "br0"

// tapNodes opens rnic0 and rnic1 as TAP-mode NICs (10.0.0.1 and 10.0.0.2
// on TAPs lab0 and lab1) in a namespace of their own. rnic0's wire carries
// every frame between them, so the script is applied there (AtoB: what
// rnic0 sends, BtoA: what it receives, as on the simulated link) and its
// capture, with a note on each frame the script touched, is the run's.
func (s *stage) tapNodes(cfg stageConfig) error {
	ns, err := newLabNetns()
	if err != nil {
		return err
	}
	s.teardown = func() error { return ipCmd("netns", "del", ns) }
	var hosts [2]neighbors
	for i := range s.nodes {
		n := newNode(i)
		n.gid = 1 // 0 is the link-local GID
		tc := tapnic.Config{Name: n.name, TAP: fmt.Sprintf("lab%d", i), Netns: ns, Bridge: labBridge,
			Prefixes: []netip.Prefix{netip.PrefixFrom(n.addr, 24)}, MAC: n.mac, MTU: 1500, Trace: cfg.trace,
			TraceEvents: s.realMarks(n.name)}
		if i == 0 {
			tc.Script = cfg.script
			tc.Pcap = s.pcap
			if tc.Script == nil {
				// a pass-everything script: the capture is then the wire's
				// in both forms, and no offload merges frames
				tc.Script = func(transport.Direction, int, []byte) transport.Verdict { return transport.Pass() }
			}
		}
		nc, err := tapnic.Open(tc)
		if err != nil {
			return err
		}
		n.dev, n.close = nc.Device, nc.Close
		n.counters = func() []ibv.Counter { return append(nc.PortCounters(), nc.FaultCounters()...) }
		s.nodes[i] = n
		hosts[i] = nc.Host()
	}
	return resolveBothWays(hosts)
}

// neighbors is a TAP NIC's host stack as resolveBothWays uses it.
type neighbors interface {
	Lookup(ip netip.Addr) ([6]byte, bool)
}

// resolveBothWays waits until each NIC has resolved the other's address
// (ARP): the bridge then forwards both ways, and the scenario's first
// frame does not wait on a resolution the simulated link never needs.
func resolveBothWays(hosts [2]neighbors) error {
	deadline := time.Now().Add(awaitLimit)
	for i, h := range hosts {
		peer := newNode(1 - i).addr
		for {
			if _, ok := h.Lookup(peer); ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("rnic%d did not resolve %s on the lab bridge within %v", i, peer, awaitLimit)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return nil
}

// realMarks records a TAP NIC's trace events with their time moved onto
// the capture's clock: the ladder places a mark at PcapEpoch plus its
// time, and a TAP capture's frames carry the wall clock.
func (s *stage) realMarks(name string) func(embedded.TraceEvent) {
	return func(e embedded.TraceEvent) {
		e.Time = time.Since(transport.PcapEpoch)
		s.mark(name, e)
	}
}

// newLabNetns creates a namespace with a bridge (STP off, no forwarding
// delay, no multicast snooping: frames cross it at once) and returns its
// name. The namespace's kernel gets no address and no IPv6, so the
// capture holds the NICs' frames only.
func newLabNetns() (string, error) {
	var b [4]byte
	rand.Read(b[:])
	ns := "rnic-lab-" + hex.EncodeToString(b[:])
	if err := ipCmd("netns", "add", ns); err != nil {
		return "", err
	}
	for _, args := range [][]string{
		{"netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "link", "add", labBridge, "type", "bridge", "stp_state", "0", "forward_delay", "0", "mcast_snooping", "0"},
		{"-n", ns, "link", "set", labBridge, "up"},
	} {
		if err := ipCmd(args...); err != nil {
			ipCmd("netns", "del", ns)
			return "", err
		}
	}
	return ns, nil
}

// ipCmd runs the ip command with args.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
