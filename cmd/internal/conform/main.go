// What `rnic conform run` does once its flags are read: connect to the
// agent, open the tester's port, run the cases, return the report.

package conform

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/tap"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/udp"
)

// Options are `rnic conform run`'s settings.
type Options struct {
	// Agent is the agent's HOST:PORT.
	Agent string
	// UDP is the tester's own address for a RoCEv2 port on kernel UDP
	// sockets (the DUT must reach it; loopback for an rnic DUT on this
	// host); UDPPort its RoCEv2 port (4791 if zero).
	UDP     netip.Addr
	UDPPort uint16
	// TAP, if set, is the tester's TAP device instead (root): TAPIP its
	// address with prefix, TAPMAC its MAC (zero: derived), TAPNetns and
	// TAPBridge where it lives, TAPMTU its MTU.
	TAP       string
	TAPIP     netip.Prefix
	TAPMAC    [6]byte
	TAPNetns  string
	TAPBridge string
	TAPMTU    int
	// DUTAddr is the DUT's address (zero: its GID of the tester's family);
	// DUTPort its RoCEv2 port (4791 if zero).
	DUTAddr netip.Addr
	DUTPort uint16
	// Transport selects the cases ("" is roce).
	Transport Transport
	// Only selects cases by a pattern (see Cases).
	Only string
	Pcap *pcap.Writer
	// Slow scales every wait bound.
	Slow float64
	// Progress, if set, gets each result as it is known.
	Progress func(Result)
}

// ErrNoCases is returned when the selection is empty.
var ErrNoCases = errors.New("conform: no case matches")

// Main runs the suite against the agent's DUT.
func Main(ctx context.Context, opt Options) (*Report, error) {
	if opt.Transport == "" {
		opt.Transport = RoCE
	}
	cases := Cases(opt.Transport, opt.Only)
	if len(cases) == 0 {
		return nil, fmt.Errorf("%w %q among the %s cases", ErrNoCases, opt.Only, opt.Transport)
	}
	client, err := agentproto.Dial(ctx, opt.Agent)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	cfg := &Config{Agent: client, DUTAddr: opt.DUTAddr, Slow: opt.Slow, Pcap: opt.Pcap}
	closePort, err := openTesterSide(opt, cfg)
	if err != nil {
		return nil, err
	}
	defer closePort()
	if err := cfg.Prepare(); err != nil {
		return nil, err
	}
	if cfg.Info.Transport != string(opt.Transport) {
		return nil, fmt.Errorf("conform: the DUT %s speaks %s, the cases %s", cfg.Info.Name, cfg.Info.Transport, opt.Transport)
	}
	rep := &Report{DUT: cfg.Info, Date: time.Now().UTC(), Results: []Result{}}
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		res := RunCase(cfg, c, false)
		rep.add(res)
		if opt.Progress != nil {
			opt.Progress(res)
		}
	}
	client.Reset()
	return rep, nil
}

// openTesterSide opens the tester's port for the transport into cfg.
func openTesterSide(opt Options, cfg *Config) (closer func() error, err error) {
	if opt.Transport == IWARP {
		return func() error { return nil }, openIWARP(cfg, opt)
	}
	port, tester, err := openPort(opt)
	if err != nil {
		return nil, err
	}
	cfg.Port, cfg.TesterAddr = port, tester
	return port.Close, nil
}

// openPort opens the tester's RoCEv2 port: a TAP, or UDP sockets.
func openPort(opt Options) (*FramePort, netip.Addr, error) {
	if opt.TAP != "" {
		return openTAPPort(opt)
	}
	if !opt.UDP.IsValid() {
		return nil, netip.Addr{}, errors.New("conform: the tester needs --udp ADDR or --tap NAME")
	}
	ep, err := udp.Open(udp.Config{Addr: opt.UDP, Port: opt.UDPPort, Reseal: Reseal, RecvTimestamps: true})
	if err != nil {
		return nil, netip.Addr{}, fmt.Errorf("conform: the tester's port: %w", err)
	}
	var dutMAC [6]byte
	if opt.DUTAddr.IsValid() {
		dutMAC = udp.SyntheticMAC(opt.DUTAddr)
	}
	p := NewFramePort(ep, PortConfig{Addr: ep.Addr(), MAC: ep.MAC(), DUTMAC: dutMAC, DUTPort: opt.DUTPort,
		Pcap: opt.Pcap})
	return p, ep.Addr(), nil
}

// openTAPPort opens a TAP with a host stack (ARP, ND) whose RoCE
// endpoint is the port: the frames' MACs come from its neighbour cache.
func openTAPPort(opt Options) (*FramePort, netip.Addr, error) {
	if !opt.TAPIP.IsValid() {
		return nil, netip.Addr{}, errors.New("conform: --tap needs --ip ADDR/PREFIX")
	}
	dev, err := tap.OpenDevice(tap.DeviceConfig{Name: opt.TAP, Netns: opt.TAPNetns, Bridge: opt.TAPBridge, MTU: opt.TAPMTU})
	if err != nil {
		return nil, netip.Addr{}, fmt.Errorf("conform: %w", err)
	}
	mac := opt.TAPMAC
	if mac == [6]byte{} {
		mac = udp.SyntheticMAC(opt.TAPIP.Addr())
	}
	h, err := tap.NewHost(tap.HostConfig{IO: dev, MAC: mac, Prefixes: []netip.Prefix{opt.TAPIP}, MTU: dev.MTU()})
	if err != nil {
		dev.Close()
		return nil, netip.Addr{}, fmt.Errorf("conform: %w", err)
	}
	h.Start()
	// The capture holds the RoCEv2 frames both ways, numbered as the
	// evidence cites them; the host's ARP and ND stay out of it (the host
	// sets the sent frames' destination MAC on its own copy).
	p := NewFramePort(h.RoCE(), PortConfig{Addr: opt.TAPIP.Addr(), MAC: mac, DUTPort: opt.DUTPort, Pcap: opt.Pcap})
	p.closer = h.Close
	return p, opt.TAPIP.Addr(), nil
}
