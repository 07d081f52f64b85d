// The tester's own side of the wire: a raw port that sends the frames a
// case crafts and hands back every frame the DUT sends, each numbered as
// it is in the tester's capture.

package conform

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
)

// PortConfig addresses the tester's RoCEv2 port and its DUT.
type PortConfig struct {
	// Addr and MAC are the tester's; DUTMAC the DUT's (the next hop).
	Addr   netip.Addr
	MAC    [6]byte
	DUTMAC [6]byte
	// DUTPort is the DUT's RoCEv2 UDP port (4791 if zero); SrcPort the
	// tester's UDP source port (0xC000 if zero).
	DUTPort uint16
	SrcPort uint16
	// Pcap, if set, records every frame both ways, in the order of their
	// numbers.
	Pcap *pcap.Writer
	// Clock, if set, is the time of the frames and the capture: a
	// simulated link's virtual clock, so that a case timing the DUT
	// measures the DUT's time, not how late the link's pacing ran
	// (time.Now if nil). Without it, a DUT frame's time is when it
	// reached the host if the endpoint knows (transport.ArrivalTimer: a
	// udp endpoint with RecvTimestamps), so that a late reader does not
	// shift it.
	Clock func() time.Time
}

// Frame is one frame on the tester's port.
type Frame struct {
	// No is the frame's number in the tester's capture (1-based).
	No    int
	Bytes []byte
	At    time.Time
	// Err is the decode error of a frame that is not a well-formed
	// RoCEv2 frame; F and H are valid only when Err is nil.
	Err error
	F   wire.Frame
	H   wire.Headers
}

// Op returns the frame's BTH opcode (0 for an undecodable frame).
func (f *Frame) Op() wire.Opcode {
	if f.Err != nil {
		return 0
	}
	return f.H.BTH.Opcode
}

// FramePort is a RoCEv2 port of the tester on any transport.Endpoint: a
// kernel UDP socket (--udp), a TAP device (--tap) or a simulated link.
type FramePort struct {
	cfg PortConfig
	ep  transport.Endpoint
	// arrival, if set, tells when the frame being received reached the
	// host (zero if unknown).
	arrival transport.ArrivalTimer
	in      chan Frame
	mu      sync.Mutex // numbers frames and orders the capture
	no      int
	drop    int // arrivals lost because nobody read them
	// closer, if set, closes what the endpoint lives on (a TAP host).
	closer func() error
}

// portQueue bounds the DUT frames waiting to be read; a DUT that floods
// the tester loses the excess (counted).
const portQueue = 4096

// NewFramePort takes over ep: its arrivals become the port's.
func NewFramePort(ep transport.Endpoint, cfg PortConfig) *FramePort {
	if cfg.DUTPort == 0 {
		cfg.DUTPort = wire.UDPPort
	}
	if cfg.SrcPort == 0 {
		cfg.SrcPort = 0xC000
	}
	p := &FramePort{cfg: cfg, ep: ep, in: make(chan Frame, portQueue)}
	if at, ok := ep.(transport.ArrivalTimer); ok && cfg.Clock == nil {
		p.arrival = at
	}
	ep.SetReceiver(p.arrive)
	return p
}

// Config returns the port's addressing.
func (p *FramePort) Config() PortConfig { return p.cfg }

// record numbers a frame and writes it to the capture, at time at or, if
// that is zero, now.
func (p *FramePort) record(b []byte, at time.Time) (int, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.no++
	if at.IsZero() {
		at = p.Now()
	}
	if p.cfg.Pcap != nil {
		p.cfg.Pcap.WriteFrame(at, b)
	}
	return p.no, at
}

// Now is the port's time (PortConfig.Clock).
func (p *FramePort) Now() time.Time {
	if p.cfg.Clock != nil {
		return p.cfg.Clock()
	}
	return time.Now()
}

func (p *FramePort) arrive(b []byte) {
	f := Frame{Bytes: append([]byte(nil), b...)}
	var at time.Time
	if p.arrival != nil {
		at = p.arrival.Arrival()
	}
	f.No, f.At = p.record(f.Bytes, at)
	if f.Err = f.F.Decode(f.Bytes, p.cfg.DUTPort); f.Err == nil {
		f.H = f.F.Packet.Headers()
	} else if f.Err = f.F.Decode(f.Bytes, 0); f.Err == nil {
		f.H = f.F.Packet.Headers()
	}
	select {
	case p.in <- f:
	default:
		p.mu.Lock()
		p.drop++
		p.mu.Unlock()
	}
}

// Send sends a frame and returns its number in the capture.
func (p *FramePort) Send(frame []byte) (int, error) {
	no, _ := p.record(frame, time.Time{})
	if err := p.ep.Send(frame); err != nil {
		return no, fmt.Errorf("conform: send frame %d: %w", no, err)
	}
	return no, nil
}

// Recv returns the next frame from the DUT, waiting up to d.
func (p *FramePort) Recv(d time.Duration) (Frame, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case f := <-p.in:
		return f, true
	case <-t.C:
		return Frame{}, false
	}
}

// Drain discards the frames already received and returns them.
func (p *FramePort) Drain() []Frame {
	var out []Frame
	for {
		select {
		case f := <-p.in:
			out = append(out, f)
		default:
			return out
		}
	}
}

// Frames returns how many frames the port has numbered.
func (p *FramePort) Frames() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.no
}

// Dropped returns how many DUT frames arrived while the port's queue was
// full (a DUT flooding the tester) and were lost to the cases.
func (p *FramePort) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.drop
}

// Close closes the endpoint.
func (p *FramePort) Close() error {
	err := p.ep.Close()
	if p.closer != nil {
		if e := p.closer(); err == nil {
			err = e
		}
	}
	return err
}

// Encap returns the encapsulation of the tester's frames to the DUT at
// dut, as a kernel socket would send them (IPv4 with DF and ID 0).
func (p *FramePort) Encap(dut netip.Addr) wire.Encap {
	src, dst := p.cfg.Addr, dut
	if src.Is4() || src.Is4In6() {
		src, dst = src.Unmap(), dst.Unmap()
	}
	return wire.Encap{DstMAC: p.cfg.DUTMAC, SrcMAC: p.cfg.MAC, Src: src, Dst: dst, TTL: 64, DF: true,
		SrcPort: p.cfg.SrcPort, DstPort: p.cfg.DUTPort}
}

// ErrNoStreamPort is what an iWARP case's setup wraps when the run has no
// iWARP port (Config.IWARP, iwarp.go).
var ErrNoStreamPort = errors.New("conform: no iWARP stream port in this run")
