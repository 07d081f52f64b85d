// An iWARP NIC: the iWARP engine (RDMAP/DDP/MPA over TCP streams, by
// default the kernel's: no root) under the verbs device, with the engine's
// MPA connection manager as the device's rdma_cm. iWARP QPs are RC only and
// connect only through the CM, so the device always offers it.

package embedded

import (
	"fmt"
	"io"
	"math"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/kerneltcp"
	"github.com/rnic/rnic/transport/stream/streamcap"
	"github.com/rnic/rnic/transport/udp"
)

// IWARPConfig describes an iWARP NIC.
type IWARPConfig struct {
	// Name is the device name (rnic0 if empty).
	Name string
	// Addr is the NIC's address: its GID, the address its listeners bind
	// and its connections leave from (e.g. 127.0.0.2 or ::1).
	Addr netip.Addr
	// Network carries the streams: kernel TCP if nil (the embedded mode),
	// a TAP-mode NIC's own TCP, or a simstream.Network on a virtual Clock.
	Network stream.Network
	// Clock drives the engine (a real clock if nil).
	Clock clock.Clock
	// MSS sizes the FPDUs (iwarp.DefaultMSS if 0; loopback allows 65483).
	MSS int
	// CRC asks peers for MPA CRCs (C=1); a peer that asks gets them anyway.
	CRC bool
	// Markers asks peers for MPA markers (M=1) and sends them to a peer
	// that asks (RFC 5044 §4.3).
	Markers bool
	// RTR selects the Ready-to-Receive messages offered and accepted
	// (iwarp.RTRAuto if zero; iwarp.RTRNone as Linux siw initiates).
	RTR iwarp.RTRMode
	// Settle is how long a connect waits after the MPA Reply before it
	// reports the connection established, so the first FPDU does not
	// follow the Reply at once (none if 0). Linux siw, on the passive
	// side, hands its socket to the QP's receive path only after it has
	// sent the Reply (with an RTR, it reads the RTR's FPDU alone and
	// then hands it over); an FPDU arriving in between sits in the
	// socket unread until more data comes, and a ping-pong program then
	// waits forever. Seen in the lab with an RTR (rping's first SEND
	// 0.3 ms after the RTR: every time) and, by cmd/internal/rping, without
	// one under load (about one run in five; not reproduced through
	// rnicd, whose first SEND comes 0.4-10 ms after the Reply). A Linux
	// initiator, slower, sends milliseconds later.
	Settle time.Duration
	// Pcap, if set, records every connection as Ethernet/IP/TCP frames.
	Pcap *pcap.Writer
	// Trace, if set, receives the engine's connection and QP trace.
	Trace io.Writer
	// Wrap, if set, wraps each connection's stream above the capture: a
	// tool that narrates what the NIC writes (the demo) sees the bytes
	// the engine writes, in its order.
	Wrap func(stream.Conn) stream.Conn
	// Seed, if set, makes the device's QPNs and keys a function of it
	// (nic.Config.Seed): a simulated run replays byte for byte.
	Seed *[32]byte
}

// DefaultSettle is a Settle that covers a siw peer in a slow (TCG) guest
// under load, as cmd/internal/rping measured it.
const DefaultSettle = 100 * time.Millisecond

// The engine's figures a program sizes its iWARP use by, so that it needs
// only this package.
const (
	// IWARPDefaultMSS is the MSS FPDUs are sized for when none is given.
	IWARPDefaultMSS = iwarp.DefaultMSS
	// IWARPMaxIRDORD is the largest IRD or ORD MPA can carry (RFC 6581 §3).
	IWARPMaxIRDORD = iwarp.MaxIRDORD
	// RTRNone offers no peer-to-peer RTR, as Linux siw initiates
	// (IWARPConfig.RTR; the zero value offers Write and Read RTRs).
	RTRNone = iwarp.RTRNone
)

// IWARPNIC is an assembled iWARP NIC.
type IWARPNIC struct {
	*nic.Device
	Stack *iwarp.Stack
	Addr  netip.Addr
	cm    *iwarpCM
	once  sync.Once
	// settle is IWARPConfig.Settle.
	settle time.Duration
}

// OpenIWARP opens an iWARP NIC. Its device reports TransportIWARP and node
// type RNIC; Verbs gives it as an ibv.Device with its ConnManager.
func OpenIWARP(cfg IWARPConfig) (*IWARPNIC, error) {
	if !cfg.Addr.IsValid() || cfg.Addr.IsUnspecified() {
		return nil, fmt.Errorf("embedded: an iWARP NIC needs an address, not %v", cfg.Addr)
	}
	if cfg.Network == nil {
		cfg.Network = &kerneltcp.Network{}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.NewReal()
	}
	n := &IWARPNIC{Addr: cfg.Addr.Unmap(), settle: cfg.Settle}
	n.cm = newIWARPCM(n)
	scfg := iwarp.Config{Clock: cfg.Clock, Network: cfg.Network, Addr: n.Addr, MSS: cfg.MSS,
		NoCRC: !cfg.CRC, Markers: cfg.Markers, RTR: cfg.RTR, OnConnEvent: n.cm.event}
	scfg.Tee = streamTee(cfg.Pcap, cfg.Clock, cfg.Wrap)
	if cfg.Trace != nil {
		var mu sync.Mutex
		w, name := cfg.Trace, cfg.Name
		scfg.Trace = func(e iwarp.TraceEvent) {
			mu.Lock()
			fmt.Fprintf(w, "%s %v\n", name, e)
			mu.Unlock()
		}
	}
	stack, err := iwarp.NewStack(scfg)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	// The MAC only names the node (its GUID): the kernel's TCP hides the
	// real one, as the embedded RoCE mode's UDP does.
	dev, err := nic.Open(nic.Config{Name: cfg.Name, Provider: stack, GIDs: []netip.Addr{n.Addr},
		MAC: udp.SyntheticMAC(n.Addr), Transport: verbs.TransportIWARP, Limits: iwarpLimits(), Seed: cfg.Seed})
	if err != nil {
		stack.Close()
		return nil, fmt.Errorf("embedded: %w", err)
	}
	n.Device, n.Stack = dev, stack
	return n, nil
}

// iwarpCaps are the capability flags of an iWARP device: nic's own, less
// UD address-vector port checks (iWARP has no UD) and RNR NAK generation
// (iWARP has no RNR: a SEND that finds no receive WQE is a Terminate).
// Memory windows are RFC 5040 STags like an MR's: the engine binds and
// invalidates them (siw offers none).
const iwarpCaps = verbs.DeviceCurrQPStateMod | verbs.DeviceSysImageGUID | verbs.DeviceSRQResize |
	verbs.DeviceMemWindow | verbs.DeviceMemWindowType2B

// iwarpMaxRdAtom is the largest IRD (max_qp_rd_atom) and ORD
// (max_qp_init_rd_atom) of an iWARP QP: the engine takes up to
// iwarp.MaxIRDORD (the MPA field's 14 bits), the verbs API carries them in
// a byte (rdma_conn_param, ibv_qp_attr).
const iwarpMaxRdAtom = min(iwarp.MaxIRDORD, math.MaxUint8)

// iwarpLimits are the device limits an iWARP NIC reports: nic's defaults
// but for what the iWARP engine decides.
func iwarpLimits() nic.Limits {
	return nic.Limits{MaxQPRdAtom: iwarpMaxRdAtom, MaxQPInitRdAtom: iwarpMaxRdAtom, DeviceCap: iwarpCaps}
}

// streamTee records each connection in w (if set) with the clock's
// timestamps, and wraps it in wrap (if set) above the capture; nil if
// neither is set.
func streamTee(w *pcap.Writer, clk clock.Clock, wrap func(stream.Conn) stream.Conn) func(stream.Conn) stream.Conn {
	if w == nil && wrap == nil {
		return nil
	}
	now := time.Now
	if v, ok := clk.(*clock.Virtual); ok {
		now = transport.VirtualTimestamps(v)
	}
	return func(s stream.Conn) stream.Conn {
		if w != nil {
			s = streamcap.TeeConnWith(s, w, streamcap.TeeConfig{Now: now, NewFramer: func() streamcap.Framer { return iwarp.NewCaptureFramer() }})
		}
		if wrap != nil {
			s = wrap(s)
		}
		return s
	}
}

// PortCounters returns the iWARP engine's counters as the port's.
func (n *IWARPNIC) PortCounters() []ibv.Counter {
	snap := n.Stack.Counters().Snapshot()
	out := make([]ibv.Counter, len(snap))
	for i, c := range snap {
		out[i] = ibv.Counter{Name: c.Name, Value: c.Value}
	}
	return out
}

// ConnManager returns the NIC's rdma_cm: MPA over the NIC's streams. It
// binds QPs of the NIC given as its ibv QPs (nic.AsIBV of n.Device).
func (n *IWARPNIC) ConnManager() ibv.ConnManager { return n.cm }

// Verbs returns n as an ibv.Device that offers rdma_cm (ibv.ConnManager):
// the NIC's own, which replaces any opt.ConnManager, since no other CM can
// connect its QPs. opt's Counters default to PortCounters and its Close
// to n.Close.
func (n *IWARPNIC) Verbs(opt nic.IBVOptions) ibv.Device {
	if opt.Counters == nil {
		opt.Counters = n.PortCounters
	}
	if opt.Close == nil {
		opt.Close = n.Close
	}
	opt.ConnManager = n.cm
	return nic.AsIBV(n.Device, opt)
}

// Close closes the listeners and connections (the QPs go to ERR), then
// the device.
func (n *IWARPNIC) Close() error {
	var err error
	n.once.Do(func() {
		n.Stack.Close()
		err = n.Device.Close()
	})
	return err
}
