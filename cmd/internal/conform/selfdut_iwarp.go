// The in-process iWARP DUT of the self-test: an rnic iWARP NIC in the
// embedded mode (kernel TCP on a loopback address), its agent, and a
// switchable fault on the NIC's TCP streams so that a case's Break
// (Break.Stream) can make it misbehave.

package conform

import (
	"context"
	"io"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agent"
	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/kerneltcp"
	"github.com/rnic/rnic/transport/stream/simstream"
)

// SelfIWARP is an in-process rnic iWARP DUT with its agent.
type SelfIWARP struct {
	NIC    *embedded.IWARPNIC
	Device ibv.Device
	Agent  *agent.Server
	Client *agentproto.Client
	Tester netip.Addr
	Pcap   *pcap.Writer
	// Network is the simulated network of the simulated mode (nil: the
	// host's TCP).
	Network    stream.Network
	fault      atomic.Pointer[iwport.Fault]
	stop, done chan struct{}
}

// StartSelfIWARP builds the DUT and its agent. opt.Pcap, if set, records
// the tester's connections (else they are numbered into io.Discard).
// opt.Sim puts the DUT and the tester on a simulated network (the
// simulated mode) whose virtual clock is paced by the wall clock.
func StartSelfIWARP(opt SelfOptions) (*SelfIWARP, error) {
	dutA, testA := opt.DUTAddr, opt.TesterAddr
	if !dutA.IsValid() || !testA.IsValid() {
		b := [4]byte{127, byte(100 + rand.IntN(100)), byte(rand.IntN(256)), 2}
		dutA = netip.AddrFrom4(b)
		b[3] = 3
		testA = netip.AddrFrom4(b)
	}
	d := &SelfIWARP{Tester: testA, Pcap: opt.Pcap}
	if d.Pcap == nil {
		d.Pcap, _ = pcap.NewWriter(io.Discard)
	}
	cfg := embedded.IWARPConfig{Name: "rnic0", Addr: dutA, Trace: opt.Trace, Network: iwport.Network(&kerneltcp.Network{}, d.stream)}
	if opt.Sim {
		clk := clock.NewVirtual()
		d.Network = simstream.NewNetwork(clk, simstream.NetConfig{Conn: simstream.Config{Seed: 1, Latency: time.Microsecond}})
		cfg.Network, cfg.Clock = iwport.Network(d.Network, d.stream), clk
		d.stop, d.done = make(chan struct{}), make(chan struct{})
		go paceClock(clk, d.stop, d.done)
	}
	n, err := embedded.OpenIWARP(cfg)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.NIC, d.Device = n, n.Verbs(nic.IBVOptions{})
	if err := d.start(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *SelfIWARP) start() error {
	var err error
	if d.Agent, err = agent.Listen(agent.Config{Device: d.Device}); err != nil {
		return err
	}
	go d.Agent.Serve()
	d.Client, err = agentproto.Dial(context.Background(), d.Agent.Addr().String())
	return err
}

// stream is the NIC's stream fault: the Break's, or none.
func (d *SelfIWARP) stream(u *iwport.Unit) [][]byte {
	if f := d.fault.Load(); f != nil && *f != nil {
		return (*f)(u)
	}
	return [][]byte{u.Bytes}
}

// Config returns a run configuration for this DUT, with its Breaker.
func (d *SelfIWARP) Config() (*Config, error) {
	cfg := &Config{Agent: d.Client, TesterAddr: d.Tester, DUTAddr: d.NIC.Addr, Breaker: d.Breaker, Pcap: d.Pcap,
		IWARP: &IWARPPort{Addr: d.Tester, Network: d.Network, Pcap: d.Pcap}}
	return cfg, cfg.Prepare()
}

// Breaker applies b's stream fault and returns its undo.
func (d *SelfIWARP) Breaker(b *Break) (restore func()) {
	if b.Stream != nil {
		f := b.Stream()
		d.fault.Store(&f)
	}
	return func() { d.fault.Store(nil) }
}

// Close tears everything down.
func (d *SelfIWARP) Close() {
	if d.Client != nil {
		d.Client.Close()
	}
	if d.Agent != nil {
		d.Agent.Close()
	}
	if d.Device != nil {
		d.Device.Close()
	}
	if d.stop != nil {
		close(d.stop)
		<-d.done
	}
}
