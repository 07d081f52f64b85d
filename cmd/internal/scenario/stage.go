package scenario

import (
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream/simstream"
)

// A stage is two RoCEv2 NICs, rnic0 (10.0.0.1) and rnic1 (10.0.0.2), on a
// simulated link with a virtual clock: a scenario's every step happens at
// a virtual time that is the same in every run, and its faults are a
// script, not chance.
type stage struct {
	clk   *clock.Virtual // nil on TAP NICs (tapstage.go): the real clock
	start time.Time      // when a TAP stage opened: its time zero
	nodes [2]*node
	out   io.Writer // the narration
	pcap  *pcap.Writer
	// notes are the link's notes by capture record (frames it lost or
	// corrupted on the script's word); marks the engines' trace events.
	notes map[int]transport.LinkNote
	marks []Mark
	// before are the counters when the scenario's steps began.
	before [2][]ibv.Counter
	// marksMu guards marks: on TAP NICs the engines run on goroutines of
	// their own.
	marksMu sync.Mutex
	// teardown runs after the NICs are closed (a TAP stage's namespace).
	teardown func() error
}

// node is one NIC with a protection domain and one registered buffer.
type node struct {
	name     string
	dev      *nic.Device
	counters func() []ibv.Counter
	close    func() error
	iw       *embedded.IWARPNIC // an iWARP stage's NIC, with its connection manager
	pd       *nic.PD
	buf      []byte
	mr       *nic.MR
	addr     netip.Addr
	mac      [6]byte
	gid      uint8 // the source GID index of n.addr (1 on a TAP NIC: 0 is link-local)
}

// bufVA is where each node's buffer is registered: the addresses on the
// wire (RETH, AtomicETH) are the same in every run.
const bufVA = 0x7f00_0000_0000

// stageConfig is what a scenario asks of its stage.
type stageConfig struct {
	// iwarp: iWARP NICs on a simulated TCP network (with MPA CRCs and
	// markers) instead of RoCEv2 NICs on a simulated link.
	iwarp  bool
	script transport.Script
	trace  io.Writer // the engines' trace lines, or nil
	pcap   io.Writer
	// tap: two TAP-mode NICs on a bridge in a namespace of their own, on
	// the real clock (tapstage.go).
	tap bool
}

func newStage(cfg stageConfig, out io.Writer) (*stage, error) {
	s := &stage{clk: clock.NewVirtual(), out: out, notes: map[int]transport.LinkNote{}}
	if cfg.tap {
		s.clk, s.start = nil, time.Now()
	}
	if cfg.pcap != nil {
		pw, err := pcap.NewNgWriter(cfg.pcap)
		if err != nil {
			return nil, err
		}
		s.pcap = pw
	}
	open := s.roceNodes
	switch {
	case cfg.iwarp:
		open = s.iwarpNodes
	case cfg.tap:
		open = s.tapNodes
	}
	if err := open(cfg); err != nil {
		s.close()
		return nil, err
	}
	for i, n := range s.nodes {
		if err := n.register(i); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// roceNodes opens two RoCEv2 NICs on a simulated link whose faults are
// cfg's script.
func (s *stage) roceNodes(cfg stageConfig) error {
	link := transport.SimConfig{Seed: 1, Latency: 2 * time.Microsecond, Faults: transport.FaultConfig{Script: cfg.script}}
	if s.pcap != nil {
		link.Pcap = s.pcap
		link.Notes = func(record int, n transport.LinkNote) { s.notes[record] |= n }
	}
	ea, eb := transport.NewSimLink(s.clk, link)
	for i, ep := range []transport.Endpoint{ea, eb} {
		n := newNode(i)
		nc, err := embedded.NewNIC(embedded.Config{Name: n.name, Addr: n.addr, MAC: n.mac, MTU: 1500, Link: ep,
			Clock: s.clk, DeferAcks: true, FixedWindow: true, Trace: cfg.trace, Seed: nodeSeed(i),
			TraceEvents: func(e embedded.TraceEvent) { s.mark(n.name, e) }})
		if err != nil {
			return err
		}
		n.dev, n.counters, n.close = nc.Device, nc.PortCounters, nc.Close
		s.nodes[i] = n
	}
	return nil
}

// iwarpNodes opens two iWARP NICs on a simulated TCP network that never
// cuts a segment short; both ask for MPA CRCs and markers.
func (s *stage) iwarpNodes(cfg stageConfig) error {
	net := simstream.NewNetwork(s.clk, simstream.NetConfig{Conn: simstream.Config{Seed: 1}})
	for i := range s.nodes {
		n := newNode(i)
		c := embedded.IWARPConfig{Name: n.name, Addr: n.addr, Network: net, Clock: s.clk, CRC: true, Markers: true,
			Trace: cfg.trace, Seed: nodeSeed(i)}
		if i == 0 {
			c.Pcap = s.pcap // one end's tee records both directions
		}
		nc, err := embedded.OpenIWARP(c)
		if err != nil {
			return err
		}
		n.dev, n.counters, n.close, n.iw = nc.Device, nc.PortCounters, nc.Close, nc
		s.nodes[i] = n
	}
	return nil
}

// newNode is node i's name and addresses: rnic0 is 10.0.0.1, rnic1 10.0.0.2.
func newNode(i int) *node {
	return &node{name: fmt.Sprintf("rnic%d", i), addr: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}),
		mac: [6]byte{0x02, 0x52, 0x4e, 0x49, 0x43, byte(i + 1)}}
}

// nodeSeed makes node i's QPNs and keys the same in every run.
func nodeSeed(i int) *[32]byte {
	var seed [32]byte
	seed[0] = byte(i + 1)
	return &seed
}

// register gives node i its protection domain and its buffer, filled with
// a pattern of its own, registered for every access at bufVA.
func (n *node) register(i int) error {
	var err error
	if n.pd, err = n.dev.AllocPD(); err != nil {
		return err
	}
	n.buf = make([]byte, 64<<10)
	for k := range n.buf {
		n.buf[k] = byte(k*7 + i)
	}
	all := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	n.mr, err = n.dev.RegMRIOVA(n.pd, n.buf, bufVA, all)
	return err
}

// mark records one engine trace event.
func (s *stage) mark(name string, e embedded.TraceEvent) {
	s.marksMu.Lock()
	s.marks = append(s.marks, Mark{name, e})
	s.marksMu.Unlock()
}

// close releases both NICs and what they stood on, and finishes the
// capture.
func (s *stage) close() error {
	for _, n := range s.nodes {
		if n != nil && n.close != nil {
			n.close()
		}
	}
	var err error
	if s.teardown != nil {
		err = s.teardown()
	}
	if s.pcap != nil {
		if perr := s.pcap.Close(); err == nil {
			err = perr
		}
	}
	return err
}

// now is the stage's time: virtual, or since a TAP stage opened.
func (s *stage) now() time.Duration {
	if s.clk == nil {
		return time.Since(s.start)
	}
	return s.clk.Now()
}

// say narrates one line.
func (s *stage) say(format string, a ...any) {
	fmt.Fprintf(s.out, "%12v  %s\n", s.now(), fmt.Sprintf(format, a...))
}

// sge is the scatter/gather entry of n bytes at off in node n's buffer.
func (n *node) sge(off, length int) []verbs.SGE {
	return []verbs.SGE{{Addr: bufVA + uint64(off), Length: uint32(length), LKey: n.mr.LKey()}}
}

// startCounting records the counters the scenario's summary is relative to.
func (s *stage) startCounting() {
	for i, n := range s.nodes {
		s.before[i] = n.counters()
	}
}

// counters narrates every counter that moved since startCounting, per NIC.
func (s *stage) counters() {
	for i, n := range s.nodes {
		var moved []string
		before := map[string]uint64{}
		for _, c := range s.before[i] {
			before[c.Name] = c.Value
		}
		for _, c := range n.counters() {
			if d := c.Value - before[c.Name]; d != 0 {
				moved = append(moved, fmt.Sprintf("%s=%d", c.Name, d))
			}
		}
		sort.Strings(moved)
		fmt.Fprintf(s.out, "counters %s: %s\n", n.name, strings.Join(moved, " "))
	}
}
