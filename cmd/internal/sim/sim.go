package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
)

// Config describes a run.
type Config struct {
	Ops     int     // operations in all, over every QP and both directions
	QPs     int     // RC QP pairs between the two devices
	Loss    float64 // probability that a frame is lost
	Reorder float64 // probability that a frame is held back behind later ones
	Dup     float64 // probability that a frame is delivered twice
	Corrupt float64 // probability that a bit of a frame flips
	Seed    uint64
	MTU     int // path MTU in bytes: 256, 512, 1024, 2048 or 4096
	MaxMsg  int // largest message in bytes (sizes are uniform in [0, MaxMsg]; 0: DefaultMaxMsg)
	// Depth is how many operations each QP keeps outstanding.
	Depth int
	// Timeout is the local ACK timeout exponent (4.096 µs × 2^Timeout).
	Timeout uint8
	// Pcap, if set, receives every frame that crosses the link.
	Pcap io.Writer
	// PcapNG writes Pcap as pcapng, each frame the link lost, duplicated,
	// corrupted or delayed with a comment saying so ("rnic: lost").
	PcapNG bool
	// Trace, if set, receives the engines' trace lines.
	Trace io.Writer
	// LinkNotes, if set with Pcap, is told which capture records the
	// link lost, duplicated, corrupted or delayed (RoCEv2 runs).
	LinkNotes func(record int, n transport.LinkNote)
	// TraceEvents, if set, receives the engines' trace events (RoCEv2
	// runs), node being the device's name.
	TraceEvents func(node string, e embedded.TraceEvent)

	// IWARP runs the workload over iWARP on a simulated TCP network
	// instead of RoCEv2 on a simulated link (see RunIWARP); Loss, Reorder,
	// Dup, Corrupt and MTU do not apply.
	IWARP bool
	// Chop (iWARP) is the probability that the simulated streams cut a
	// segment or a delivery at a random point (DefaultChop if zero; a
	// negative value: never).
	Chop float64
}

// Result is the outcome of a run.
type Result struct {
	Ops             int
	OK              int
	Failed          int
	Bytes           int64 // payload bytes of successful operations
	MismatchedBytes int64 // bytes that differ from the reference model
	VirtualTime     time.Duration
	// Counters of the two devices' engines, in a fixed order.
	CountersA, CountersB []ibv.Counter
	// Failures describes the first failures, for the report.
	Failures []string
}

// Line is the summary line `rnic sim` ends with.
func (r *Result) Line() string {
	return fmt.Sprintf("sim: ops=%d ok=%d failed=%d bytes=%d mismatched_bytes=%d virtual_time=%v",
		r.Ops, r.OK, r.Failed, r.Bytes, r.MismatchedBytes, r.VirtualTime)
}

// Passed reports whether every operation completed and matched the model.
func (r *Result) Passed() bool {
	return r.Failed == 0 && r.MismatchedBytes == 0 && r.OK == r.Ops
}

// Defaults of the fields a zero Config leaves unset, shared with the
// `rnic sim` flags.
const (
	DefaultOps    = 1000
	DefaultQPs    = 4
	DefaultMTU    = 1024
	DefaultMaxMsg = 16384
	DefaultDepth  = 8
)

func (c *Config) defaults() error {
	if c.Ops < 0 || c.QPs < 0 || c.MaxMsg < 0 || c.Depth < 0 {
		return errors.New("sim: negative ops, qps, max-msg or depth")
	}
	if c.QPs == 0 {
		c.QPs = DefaultQPs
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.MaxMsg == 0 {
		c.MaxMsg = DefaultMaxMsg
	}
	if verbs.MTUFromBytes(c.MTU) == 0 {
		return fmt.Errorf("sim: path MTU %d is not 256, 512, 1024, 2048 or 4096", c.MTU)
	}
	if c.Depth == 0 {
		c.Depth = DefaultDepth
	}
	if c.Timeout == 0 {
		c.Timeout = 10 // 4.2 ms: short virtual waits, long enough for any RTT here
	}
	for _, p := range []float64{c.Loss, c.Reorder, c.Dup, c.Corrupt} {
		if p < 0 || p >= 1 {
			return fmt.Errorf("sim: fault probability %v outside [0, 1)", p)
		}
	}
	return c.checkSize()
}

// pcapWriter is the writer of cfg.Pcap (nil without one): pcapng with
// PcapNG, else classic pcap.
func (cfg *Config) pcapWriter() (*pcap.Writer, error) {
	switch {
	case cfg.Pcap == nil:
		return nil, nil
	case cfg.PcapNG:
		return pcap.NewNgWriter(cfg.Pcap)
	}
	return pcap.NewWriter(cfg.Pcap)
}

// Run performs a simulation.
func Run(cfg Config) (*Result, error) {
	if cfg.IWARP {
		return runIWARP(cfg)
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	clk := clock.NewVirtual()
	link := transport.SimConfig{Seed: cfg.Seed, Faults: transport.Symmetric(transport.Faults{
		Loss: cfg.Loss, Reorder: cfg.Reorder, Dup: cfg.Dup, Corrupt: cfg.Corrupt})}
	pw, err := cfg.pcapWriter()
	if err != nil {
		return nil, err
	}
	if pw != nil {
		link.Pcap, link.Notes = pw, cfg.LinkNotes
	}
	if err := link.Validate(); err != nil {
		return nil, err
	}
	ea, eb := transport.NewSimLink(clk, link)
	w := &world{cfg: cfg, clk: clk, rng: rand.New(rand.NewPCG(cfg.Seed, 0x73696d)),
		psns: rand.New(rand.NewPCG(cfg.Seed, 0x70736e))} // "psn"
	if w.a, err = w.newNode("rnic0", ea, 1); err != nil {
		return nil, err
	}
	if w.b, err = w.newNode("rnic1", eb, 2); err != nil {
		return nil, err
	}
	for i := 0; i < cfg.QPs; i++ {
		if err := w.newPair(i); err != nil {
			return nil, err
		}
	}
	res := w.run()
	if pw != nil {
		if err := pw.Close(); err != nil {
			return nil, fmt.Errorf("sim: pcap: %w", err)
		}
	}
	return res, nil
}

// node is one device with its buffers.
type node struct {
	name string
	dev  *nic.Device
	// counters are the device's port counters (its engine's, in a fixed
	// order); iwarp, in an iWARP run, is the NIC, whose connection
	// manager the run drives on the virtual clock (ListenFunc and
	// ConnectFunc: ibv's CM waits for a connection in real time).
	counters func() []ibv.Counter
	iwarp    *embedded.IWARPNIC
	close    func() error
	pd       *nic.PD
	addr     netip.Addr
	mac      [6]byte
	// groups are the node's shared CQs; byQPN finds a completion's end;
	// ends counts the node's QPs.
	groups []*cqGroup
	byQPN  map[uint32]*end
	ends   int
	// nextVA is the virtual address the next buffer is registered at: the
	// addresses that go on the wire (RETH, AtomicETH, STag offsets) are the
	// same in every run, unlike the Go heap's.
	nextVA uint64
}

// firstVA is where a node's buffers start, in the style of a 64-bit Linux
// process's mmap area.
const firstVA = 0x7f5e_0000_0000

// newNode opens RoCEv2 device n on its end of the simulated link.
func (w *world) newNode(name string, ep transport.Endpoint, n byte) (*node, error) {
	nd := &node{name: name, nextVA: firstVA, mac: [6]byte{0x02, 0x52, 0x4e, 0x49, 0x43, n}, addr: netip.AddrFrom4([4]byte{10, 0, 0, n})}
	cfg := embedded.Config{Name: name, Addr: nd.addr, MAC: nd.mac, MTU: 9000, Link: ep, Clock: w.clk, DeferAcks: true, FixedWindow: true,
		Trace: w.cfg.Trace, Seed: deviceSeed(w.cfg.Seed, n)}
	if te := w.cfg.TraceEvents; te != nil {
		cfg.TraceEvents = func(e embedded.TraceEvent) { te(name, e) }
	}
	nc, err := embedded.NewNIC(cfg)
	if err != nil {
		return nil, err
	}
	nd.dev, nd.counters, nd.close = nc.Device, nc.PortCounters, nc.Close
	if nd.pd, err = nd.dev.AllocPD(); err != nil {
		return nil, err
	}
	return nd, nil
}

// deviceSeed derives device n's seed from the run's: its QPNs (hence UDP
// source ports) and keys come from the seed, so a run replays byte for byte.
func deviceSeed(seed uint64, n byte) *[32]byte {
	src := rand.NewPCG(seed, 0x6465766963650000|uint64(n)) // "device" | n
	var s [32]byte
	for i := 0; i < len(s); i += 8 {
		binary.LittleEndian.PutUint64(s[i:], src.Uint64())
	}
	return &s
}

// slotBytes is the size of one message slot.
func (w *world) slotBytes() int { return max(w.cfg.MaxMsg, 8) }

// Addresses inside each end's buffer: one region per QP end, laid out as
// a source area, then Depth slots each for WRITE targets, READ sinks, SEND
// receive buffers and atomic results, then the atomic word.
type layout struct{ src, write, read, recv, atomRes, atomWord, size int }

func (w *world) layout() layout {
	s, d := w.slotBytes(), w.cfg.Depth
	var l layout
	l.src = 0
	l.write = 2 * s
	l.read = l.write + d*s
	l.recv = l.read + d*s
	l.atomRes = l.recv + d*s
	l.atomWord = l.atomRes + 8*d
	l.size = l.atomWord + 8
	return l
}

// end is one side of a QP pair: its QP, CQs, memory and model state.
type end struct {
	nd   *node
	qp   *nic.QP
	scq  *nic.CQ
	rcq  *nic.CQ
	buf  []byte
	mr   *nic.MR
	base uint64
	// peer is the other side.
	peer *end
	// ops outstanding on this side's send queue, in post order.
	out []*op
	// receives expected on this side, in arrival order.
	recvs []*op
	// model value of this side's atomic word.
	word uint64
	// next slot of each area: WRITE targets, READ sinks, receive
	// buffers (taken by the peer's SENDs), atomic results.
	next [4]int
	// psn is the QP's initial send PSN (RoCE).
	psn uint32
	// queued: the end is on the world's hungry list.
	queued bool
}

type opKind uint8

const (
	kSend opKind = iota
	kWrite
	kRead
	kCmpSwap
	kFetchAdd
)

type op struct {
	kind   opKind
	id     uint64
	n      int
	dstOff int // in the destination buffer
	expect []byte
	orig   uint64 // atomics: the value the model predicts
	failed bool
}

type world struct {
	cfg Config
	clk *clock.Virtual
	rng *rand.Rand
	// psns draws each RC QP's initial send PSN, at random over the whole
	// 24-bit space as real tools do (so runs cross the PSN wrap), from a
	// stream of its own so the workload does not depend on it.
	psns *rand.Rand
	a, b *node
	ends []*end
	res  Result
	ids  uint64
	// posted counts operations posted so far.
	posted int
	// hungry lists the ends whose send queue has room, in the order they
	// get their next operation.
	hungry []*end
	// idleFrom: every end before it was seen idle (see idle).
	idleFrom int
	// iwarp: the QPs are iWARP's (READs take one SGE; a WRITE completes
	// before it has landed).
	iwarp bool
	// listen (iWARP) readies rnic1 to accept pair i on e and returns where
	// to connect and the private data naming the pair.
	listen func(i int, e *end) (netip.AddrPort, []byte)
}

func (w *world) newEnd(nd *node) (*end, error) {
	l := w.layout()
	e := &end{nd: nd, buf: make([]byte, l.size)}
	for i := 0; i < 2*w.slotBytes(); i++ {
		e.buf[i] = byte(w.rng.Uint32())
	}
	var err error
	depth := w.cfg.Depth
	if err = w.joinGroup(nd, e); err != nil {
		return nil, err
	}
	all := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	if e.mr, err = nd.dev.RegMRIOVA(nd.pd, e.buf, nd.nextVA, all); err != nil {
		return nil, err
	}
	e.base = e.mr.Addr()
	nd.nextVA += uint64(l.size+2*4096) &^ 4095 // a guard page between buffers
	e.qp, err = nd.dev.CreateQP(nd.pd, nic.QPInit{Type: verbs.QPTypeRC, SendCQ: e.scq, RecvCQ: e.rcq,
		Cap: verbs.QPCap{MaxSendWR: uint32(depth), MaxRecvWR: uint32(depth), MaxSendSGE: 2, MaxRecvSGE: 2}})
	if err != nil {
		return nil, err
	}
	if nd.byQPN == nil {
		nd.byQPN = map[uint32]*end{}
	}
	nd.byQPN[e.qp.QPN()] = e
	return e, nil
}

func (w *world) newPair(i int) error {
	x, err := w.newEnd(w.a)
	if err != nil {
		return err
	}
	y, err := w.newEnd(w.b)
	if err != nil {
		return err
	}
	x.peer, y.peer = y, x
	if w.iwarp {
		if err := w.connectIWARP(i, x, y); err != nil {
			return fmt.Errorf("sim: connect QP pair %d: %w", i, err)
		}
		w.addEnds(x, y)
		return nil
	}
	x.psn, y.psn = w.psns.Uint32()&0xFFFFFF, w.psns.Uint32()&0xFFFFFF
	for _, e := range []*end{x, y} {
		if err := w.connect(e); err != nil {
			return fmt.Errorf("sim: connect QP pair %d: %w", i, err)
		}
	}
	w.addEnds(x, y)
	return nil
}

// connect walks a QP through RESET → INIT → RTR → RTS through nic, with the
// attributes ibv_rc_pingpong uses (min_rnr_timer 12, retry_cnt 7,
// rnr_retry 7) except a shorter timeout.
func (w *world) connect(e *end) error {
	all := memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	if err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: all},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		return err
	}
	peer := e.peer
	rtr := verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTUFromBytes(w.cfg.MTU), DestQPN: peer.qp.QPN(),
		RQPSN: peer.psn, MaxDestRdAtomic: uint8(min(w.cfg.Depth, 16)), MinRNRTimer: 1,
		AV: verbs.AddressVector{DGID: verbs.GIDFromAddr(peer.nd.addr), HopLimit: 64, PortNum: 1, DMAC: peer.nd.mac}}
	if err := e.qp.Modify(&rtr, verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|
		verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer); err != nil {
		return err
	}
	rts := verbs.QPAttr{State: verbs.QPSRTS, SQPSN: e.psn, Timeout: w.cfg.Timeout, RetryCnt: 7, RNRRetry: 7,
		MaxRdAtomic: uint8(min(w.cfg.Depth, 16))}
	return e.qp.Modify(&rts, verbs.AttrState|verbs.AttrSQPSN|verbs.AttrTimeout|verbs.AttrRetryCnt|
		verbs.AttrRNRRetry|verbs.AttrMaxQPRdAtomic)
}

// run posts operations as queues free up and checks every completion.
func (w *world) run() *Result {
	wcs := make([]verbs.WC, 64)
	for {
		w.postMore()
		if w.posted == w.cfg.Ops && w.idle() {
			break
		}
		// Run the clock until a completion is waiting (or nothing is left
		// to happen: then something is lost for good).
		w.clk.Run(w.completionReady)
		progressed := w.pollAll(wcs)
		if !progressed && w.clk.Pending() == 0 {
			w.failStuck()
			break
		}
	}
	for _, e := range w.ends {
		if v := binary.NativeEndian.Uint64(e.buf[w.layout().atomWord:]); v != e.word {
			w.mismatch(8, fmt.Sprintf("%s QP %#x: final atomic word %#x, model %#x", e.nd.name, e.qp.QPN(), v, e.word))
		}
	}
	w.res.Ops = w.cfg.Ops
	w.res.VirtualTime = w.clk.Now()
	w.res.CountersA, w.res.CountersB = w.a.counters(), w.b.counters()
	return &w.res
}

// idle reports whether no operation is outstanding. It is asked only once
// every operation is posted, when an end that fell idle stays idle: the
// ends before idleFrom need no second look.
func (w *world) idle() bool {
	for ; w.idleFrom < len(w.ends); w.idleFrom++ {
		if e := w.ends[w.idleFrom]; len(e.out) > 0 || len(e.recvs) > 0 {
			return false
		}
	}
	return true
}

// failStuck fails every operation still outstanding when nothing more can
// happen.
func (w *world) failStuck() {
	for _, e := range w.ends {
		for _, o := range e.out {
			w.fail(o, fmt.Sprintf("%s QP %#x: wr %d (%v) never completed", e.nd.name, e.qp.QPN(), o.id, o.kind))
		}
		e.out = nil
	}
}

func (k opKind) String() string {
	return [...]string{"SEND", "RDMA_WRITE", "RDMA_READ", "CMP_SWAP", "FETCH_ADD"}[k]
}

func (w *world) fail(o *op, why string) {
	if o.failed {
		return
	}
	o.failed = true
	w.res.Failed++
	if len(w.res.Failures) < 10 {
		w.res.Failures = append(w.res.Failures, why)
	}
}

func (w *world) mismatch(n int, why string) {
	w.res.MismatchedBytes += int64(n)
	if len(w.res.Failures) < 10 {
		w.res.Failures = append(w.res.Failures, why)
	}
}
