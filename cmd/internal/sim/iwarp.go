package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/simstream"
)

// DefaultChop is the probability with which an iWARP run's simulated
// streams cut segments and deliveries at random points.
const DefaultChop = 0.3

// iwarpPort is the port rnic1 listens on in an iWARP run.
const iwarpPort = 18515

// ErrIWARPFaults: frame faults asked of an iWARP run. TCP below iWARP is
// reliable and ordered, so there is nothing to lose, reorder or duplicate,
// and a corrupted byte fails the MPA CRC, which ends the connection with a
// Terminate (RFC 5044 has no retransmission): nothing an operation could
// survive.
var ErrIWARPFaults = errors.New("sim: --loss, --reorder, --dup and --corrupt do not apply to iWARP: TCP is reliable, and a corrupted FPDU fails its CRC and terminates the connection")

// runIWARP performs the workload of Run over iWARP: both devices' iWARP
// engines on a simulated TCP network on the virtual clock, whose streams
// split and coalesce bytes at random points (Chop). Each QP pair is
// connected through the connection manager (MPA Request and Reply, RTR).
// The same seed gives the same result.
func runIWARP(cfg Config) (*Result, error) {
	if cfg.Loss != 0 || cfg.Reorder != 0 || cfg.Dup != 0 || cfg.Corrupt != 0 {
		return nil, ErrIWARPFaults
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	switch {
	case cfg.Chop == 0:
		cfg.Chop = DefaultChop
	case cfg.Chop < 0:
		cfg.Chop = 0
	case cfg.Chop > 1:
		return nil, fmt.Errorf("sim: chop %v outside [0, 1]", cfg.Chop)
	}
	clk := clock.NewVirtual()
	net := simstream.NewNetwork(clk, simstream.NetConfig{Conn: simstream.Config{Seed: cfg.Seed, Chop: cfg.Chop}})
	pw, err := cfg.pcapWriter()
	if err != nil {
		return nil, err
	}
	w := &world{cfg: cfg, clk: clk, rng: rand.New(rand.NewPCG(cfg.Seed, 0x73696d)), iwarp: true}
	if w.a, err = w.newIWARPNode("rnic0", net, 1, pw); err != nil {
		return nil, err
	}
	defer w.a.close()
	if w.b, err = w.newIWARPNode("rnic1", net, 2, nil); err != nil {
		return nil, err
	}
	defer w.b.close()
	l, err := w.listenIWARP()
	if err != nil {
		return nil, err
	}
	for i := 0; i < cfg.QPs; i++ {
		if err := w.newPair(i); err != nil {
			return nil, err
		}
	}
	l.Close()
	res := w.run()
	if pw != nil {
		if err := pw.Close(); err != nil {
			return nil, fmt.Errorf("sim: pcap: %w", err)
		}
	}
	return res, nil
}

// listenIWARP readies rnic1 to accept each pair's connection: the MPA
// Request's private data names the pair.
func (w *world) listenIWARP() (io.Closer, error) {
	pending := map[byte]*end{}
	l, addr, err := w.b.iwarp.ListenFunc(iwarpPort, func(r embedded.MPARequest) {
		pd := r.PrivateData()
		if len(pd) == 1 && pending[pd[0]] != nil {
			e := pending[pd[0]]
			delete(pending, pd[0])
			ird := uint16(min(w.cfg.Depth, embedded.IWARPMaxIRDORD))
			if err := r.Accept(e.qp.QPN(), nil, ird, ird); err == nil {
				return
			}
		}
		r.Reject(nil)
	})
	if err != nil {
		return nil, err
	}
	w.listen = func(i int, e *end) (netip.AddrPort, []byte) {
		pending[byte(i)] = e
		return addr, []byte{byte(i)}
	}
	return l, nil
}

// newIWARPNode opens iWARP device n on the simulated TCP network; pw, if
// set, records its connections (one tee at one end records both
// directions).
func (w *world) newIWARPNode(name string, net stream.Network, n byte, pw *pcap.Writer) (*node, error) {
	nd := &node{name: name, nextVA: firstVA, addr: netip.AddrFrom4([4]byte{10, 0, 0, n})}
	nc, err := embedded.OpenIWARP(embedded.IWARPConfig{Name: name, Addr: nd.addr, Network: net, Clock: w.clk, CRC: true,
		Pcap: pw, Trace: w.cfg.Trace, Seed: deviceSeed(w.cfg.Seed, n)})
	if err != nil {
		return nil, err
	}
	nd.dev, nd.counters, nd.close, nd.iwarp = nc.Device, nc.PortCounters, nc.Close, nc
	if nd.pd, err = nd.dev.AllocPD(); err != nil {
		return nil, err
	}
	return nd, nil
}

// connectIWARP moves both QPs of pair i to INIT, then connects x (on
// rnic0) to y (on rnic1) through the connection manager and runs the clock
// until both are established.
func (w *world) connectIWARP(i int, x, y *end) error {
	all := memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	for _, e := range []*end{x, y} {
		if err := e.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: all},
			verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
			return err
		}
	}
	addr, pd := w.listen(i, y)
	var res error
	done := false
	ord := uint16(min(w.cfg.Depth, embedded.IWARPMaxIRDORD))
	if err := x.nd.iwarp.ConnectFunc(x.qp.QPN(), addr, pd, ord, ord, func(err error) { res, done = err, true }); err != nil {
		return err
	}
	// The responder is in RTS at once; its sends wait for the RTR, which
	// the initiator sends with its first bytes after the Reply.
	w.clk.Run(func() bool { return done })
	switch {
	case !done:
		return errors.New("connection setup never finished")
	case res != nil:
		return res
	case x.qp.State() != verbs.QPSRTS || y.qp.State() != verbs.QPSRTS:
		return fmt.Errorf("QP states %v and %v after connecting", x.qp.State(), y.qp.State())
	}
	return nil
}

// awaitLanded runs the clock until got holds want: an iWARP RDMA WRITE
// completes once the stream took it, before the peer placed it. It stops
// when nothing is left to happen or after a virtual minute, and the caller
// then finds the difference.
func (w *world) awaitLanded(got, want []byte) {
	limit := w.clk.Now() + time.Minute
	w.clk.Run(func() bool { return bytes.Equal(got, want) || w.clk.Now() > limit })
}
