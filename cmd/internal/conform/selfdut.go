// The in-process DUT of the self-test: an rnic NIC in the embedded mode
// on a loopback address, its agent, and the tester's port beside it, with
// a fault hook on the NIC's link so that a case's Break can make it
// misbehave.

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
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rdmacm"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/udp"
)

// SelfOptions configure a SelfDUT.
type SelfOptions struct {
	// DUTAddr and TesterAddr are loopback addresses; zero picks a random
	// pair in 127.0.0.0/8.
	DUTAddr, TesterAddr netip.Addr
	// Pcap, if set, is the tester's capture.
	Pcap *pcap.Writer
	// Trace, if set, gets the DUT engine's trace.
	Trace io.Writer
	// Sim puts the DUT and the tester on a simulated link (the simulated
	// mode) instead of kernel UDP sockets: its virtual clock is paced by
	// the wall clock, as the agent's waits are.
	Sim bool
}

// SelfDUT is an in-process rnic DUT with its agent and a tester port.
type SelfDUT struct {
	NIC    *embedded.NIC
	Device ibv.Device
	Agent  *agent.Server
	Client *agentproto.Client
	Port   *FramePort
	Link   *FaultLink
	Tester netip.Addr
	// stop ends the simulated clock's pacer.
	stop chan struct{}
	done chan struct{}
	// clock is the tester port's time on a simulated link (nil: wall).
	clock func() time.Time
}

// StartSelf builds the DUT, its agent and the tester's port.
func StartSelf(opt SelfOptions) (*SelfDUT, error) {
	var lastErr error
	for try := 0; try < 8; try++ {
		dutA, testA := opt.DUTAddr, opt.TesterAddr
		if !dutA.IsValid() || !testA.IsValid() {
			b := [4]byte{127, byte(100 + rand.IntN(100)), byte(rand.IntN(256)), 0}
			b[3] = 2
			dutA = netip.AddrFrom4(b)
			b[3] = 3
			testA = netip.AddrFrom4(b)
		}
		d, err := startSelf(opt, dutA, testA)
		if err == nil {
			return d, nil
		}
		lastErr = err
		if opt.DUTAddr.IsValid() && opt.TesterAddr.IsValid() {
			break
		}
	}
	return nil, lastErr
}

func startSelf(opt SelfOptions, dutA, testA netip.Addr) (*SelfDUT, error) {
	if opt.Sim {
		return startSim(opt, dutA, testA)
	}
	ep, err := udp.Open(udp.Config{Addr: dutA, Reseal: Reseal})
	if err != nil {
		return nil, err
	}
	link := NewFaultLink(ep)
	n, err := embedded.Open(embedded.UDPConfig{Name: "rnic0", Addr: dutA, Link: link, Trace: opt.Trace})
	if err != nil {
		return nil, err
	}
	dev, err := rdmacm.Local(n, rdmacm.Config{})
	if err != nil {
		n.Close()
		return nil, err
	}
	d := &SelfDUT{NIC: n, Device: dev, Link: link, Tester: testA}
	tep, err := udp.Open(udp.Config{Addr: testA, Reseal: Reseal, RecvTimestamps: true})
	if err != nil {
		d.Close()
		return nil, err
	}
	if err := d.start(opt, testA, tep, tep.MAC()); err != nil {
		tep.Close()
		d.Close()
		return nil, err
	}
	return d, nil
}

// startSim builds the DUT on one end of a simulated link and the tester's
// port on the other.
func startSim(opt SelfOptions, dutA, testA netip.Addr) (*SelfDUT, error) {
	clk := clock.NewVirtual()
	a, b := transport.NewSimLink(clk, transport.SimConfig{Seed: 1, Latency: time.Microsecond})
	link := NewFaultLink(a)
	synthetic := func(x netip.Addr) ([6]byte, bool) { return udp.SyntheticMAC(x), true }
	n, err := embedded.NewNIC(embedded.Config{Name: "rnic0", Addr: dutA, MAC: udp.SyntheticMAC(dutA), Link: link,
		Clock: clk, Resolve: synthetic, Trace: opt.Trace})
	if err != nil {
		return nil, err
	}
	dev, err := rdmacm.Local(n, rdmacm.Config{})
	if err != nil {
		n.Close()
		return nil, err
	}
	d := &SelfDUT{NIC: n, Device: dev, Link: link, Tester: testA, stop: make(chan struct{}), done: make(chan struct{})}
	epoch := time.Now()
	d.clock = func() time.Time { return epoch.Add(clk.Now()) }
	go d.pace(clk)
	if err := d.start(opt, testA, b, udp.SyntheticMAC(testA)); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// pace runs the virtual clock's events as wall time passes.
func (d *SelfDUT) pace(clk *clock.Virtual) { paceClock(clk, d.stop, d.done) }

// paceClock runs clk's events as wall time passes until stop is closed,
// then closes done.
func paceClock(clk *clock.Virtual, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(100 * time.Microsecond)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			clk.RunFor(now.Sub(last))
			last = now
		}
	}
}

func (d *SelfDUT) start(opt SelfOptions, testA netip.Addr, tep transport.Endpoint, testMAC [6]byte) error {
	var err error
	if d.Agent, err = agent.Listen(agent.Config{Device: d.Device}); err != nil {
		return err
	}
	go d.Agent.Serve()
	d.Port = NewFramePort(tep, PortConfig{Addr: testA, MAC: testMAC, DUTMAC: d.NIC.MAC, Pcap: opt.Pcap, Clock: d.clock})
	d.Client, err = agentproto.Dial(context.Background(), d.Agent.Addr().String())
	return err
}

// Config returns a run configuration for this DUT, with its Breaker.
func (d *SelfDUT) Config() (*Config, error) {
	cfg := &Config{Agent: d.Client, Port: d.Port, TesterAddr: d.Tester, DUTAddr: d.NIC.Addr, Breaker: d.Breaker}
	return cfg, cfg.Prepare()
}

// Breaker applies b to the DUT and returns its undo.
func (d *SelfDUT) Breaker(b *Break) (restore func()) {
	out, in := b.Out, b.In
	if b.Fresh != nil {
		fo, fi := b.Fresh()
		out, in = chain(out, fo), chain(in, fi)
	}
	d.Link.Set(out, in)
	var undo func()
	if b.Apply != nil {
		undo = b.Apply(d)
	}
	return func() {
		if undo != nil {
			undo()
		}
		d.Link.Set(nil, nil)
	}
}

// Close tears everything down.
func (d *SelfDUT) Close() {
	if d.Client != nil {
		d.Client.Close()
	}
	if d.Agent != nil {
		d.Agent.Close()
	}
	if d.Port != nil {
		d.Port.Close()
	}
	if d.Device != nil {
		d.Device.Close()
	}
	if d.stop != nil {
		close(d.stop)
		<-d.done
	}
}

// FaultLink is a transport.Endpoint that passes the frames of the link it
// wraps through switchable faults: the self-test's way of breaking a DUT.
type FaultLink struct {
	inner transport.Endpoint
	out   atomic.Pointer[FrameFault]
	in    atomic.Pointer[FrameFault]
	stay  atomic.Bool // ignore leaves of multicast groups (faultlink_groups.go)
}

// NewFaultLink wraps ep (no faults set).
func NewFaultLink(ep transport.Endpoint) *FaultLink { return &FaultLink{inner: ep} }

// Set installs the faults on sent and received frames (nil: none).
func (l *FaultLink) Set(out, in FrameFault) {
	l.out.Store(&out)
	l.in.Store(&in)
}

func apply(p *FrameFault, frame []byte) []byte {
	if p == nil || *p == nil {
		return frame
	}
	return (*p)(append([]byte(nil), frame...))
}

// Send implements transport.Endpoint.
func (l *FaultLink) Send(frame []byte) error {
	if f := apply(l.out.Load(), frame); f != nil {
		return l.inner.Send(f)
	}
	return nil
}

// SetReceiver implements transport.Endpoint.
func (l *FaultLink) SetReceiver(recv func([]byte)) {
	if recv == nil {
		l.inner.SetReceiver(nil)
		return
	}
	l.inner.SetReceiver(func(frame []byte) {
		if f := apply(l.in.Load(), frame); f != nil {
			recv(f)
		}
	})
}

// Close implements transport.Endpoint.
func (l *FaultLink) Close() error { return l.inner.Close() }

// HoldSourcePort and ReleaseSourcePort pass the engine's per-QP source
// ports to a kernel UDP link (transport.SourcePorts).
func (l *FaultLink) HoldSourcePort(port uint16) {
	if sp, ok := l.inner.(transport.SourcePorts); ok {
		sp.HoldSourcePort(port)
	}
}

func (l *FaultLink) ReleaseSourcePort(port uint16) {
	if sp, ok := l.inner.(transport.SourcePorts); ok {
		sp.ReleaseSourcePort(port)
	}
}
