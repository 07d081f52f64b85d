// FaultIO: seeded faults (transport.WithFaults) between the Host and its
// wire, so that a TAP-mode NIC sees loss, duplication, corruption,
// reordering and delay on a real link, decided as on the simulated one.
//
//	Host ── WriteFrame ──▶ FaultEndpoint (AtoB) ──▶ inner FrameIO (TAP)
//	Host ◀── ReadFrame ◀── queue ◀── FaultEndpoint (BtoA) ◀── reader ◀── inner
//
// Only IP frames take faults. ARP carries no checksum, so a flipped bit in
// a reply would poison the neighbour cache for minutes, which no Ethernet
// does (its FCS drops the frame); ARP passes untouched. Everything the IP
// frames carry is checked end to end (IPv4 header, TCP and ICMPv6
// checksums, RoCEv2's ICRC), so a corrupted IP frame is caught where a
// real peer would catch it.
//
// The wrapper moves plain frames: a Device under faults must be opened
// without offload, so that one frame is one wire frame to lose.

package tap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
)

// faultQueueLen bounds the frames delivered but not yet read by the Host;
// more are dropped as a full receive ring drops them.
const faultQueueLen = 4096

// FaultIO is a FrameIO with faults; see the file comment.
type FaultIO struct {
	inner FrameIO
	fe    *transport.FaultEndpoint
	rec   transport.FrameRecorder // records what bypasses fe (ARP)

	in        chan []byte
	done      chan struct{}
	closeOnce sync.Once
	overflow  uint64 // frames dropped on a full queue; guarded by mu
	mu        sync.Mutex
}

// NewFaultIO wraps inner with the faults of cfg (see FaultSpec.Config: AtoB
// is what the Host writes). If rec is set it records every frame that
// crosses the wire, with a pcapng comment on each the faults touched; the
// Host then must not record too. NewFaultIO takes inner over: Close closes
// it.
func NewFaultIO(inner FrameIO, cfg transport.FaultConfig, rec transport.FrameRecorder) (*FaultIO, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tap: %w", err)
	}
	if v, ok := inner.(vnetIO); ok && v.Offload() {
		return nil, errors.New("tap: faults need a TAP without offload (one frame, one wire frame)")
	}
	f := &FaultIO{inner: inner, rec: rec, in: make(chan []byte, faultQueueLen), done: make(chan struct{})}
	link := &frameLink{io: inner, bypass: f.deliver}
	f.fe = transport.WithFaults(link, clock.NewReal(), cfg)
	if rec != nil {
		f.fe.Capture(rec, time.Now)
	}
	f.fe.SetReceiver(f.deliver)
	go link.read(f.record)
	return f, nil
}

// ReadFrame implements FrameIO: the next frame the faults let through.
func (f *FaultIO) ReadFrame(b []byte) (int, error) {
	select {
	case frame := <-f.in:
		return copy(b, frame), nil
	case <-f.done:
		return 0, fmt.Errorf("tap: faulty link: %w", os.ErrClosed)
	}
}

// WriteFrame implements FrameIO: IP frames go through the faults, ARP
// straight out.
func (f *FaultIO) WriteFrame(b []byte) error {
	if !takesFaults(b) {
		f.record(b)
		return f.inner.WriteFrame(b)
	}
	return f.fe.Send(b)
}

// Close implements FrameIO: it closes the wrapped FrameIO; held copies are
// discarded when their time comes.
func (f *FaultIO) Close() error {
	f.closeOnce.Do(func() { close(f.done) })
	return f.fe.Close()
}

// Stats returns the counters of the faults on the frames the Host sent
// (transport.AtoB) or received (transport.BtoA).
func (f *FaultIO) Stats(dir transport.Direction) transport.Counters {
	return f.fe.Stats(dir)
}

// Overflow is how many received frames were dropped because the Host did
// not read them in time.
func (f *FaultIO) Overflow() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.overflow
}

// deliver queues a frame for ReadFrame (the FaultEndpoint's receiver, and
// the bypass of ARP).
func (f *FaultIO) deliver(frame []byte) {
	select {
	case f.in <- slices.Clone(frame):
	case <-f.done:
	default:
		f.mu.Lock()
		f.overflow++
		f.mu.Unlock()
	}
}

// record writes a frame that bypasses the faults to the capture.
func (f *FaultIO) record(frame []byte) {
	if f.rec != nil {
		_ = f.rec.WriteFrame(time.Now(), frame)
	}
}

// takesFaults reports whether frame is IPv4 or IPv6 (the only frames the
// faults touch).
func takesFaults(frame []byte) bool {
	if len(frame) < ethHeaderLen {
		return false
	}
	et := binary.BigEndian.Uint16(frame[12:14])
	return et == 0x0800 || et == 0x86DD
}

// frameLink is a FrameIO as a transport.Endpoint (the FaultEndpoint's
// wire): Send writes a frame, and a reader goroutine hands each frame read
// to the receiver, or to bypass if it takes no faults.
type frameLink struct {
	io     FrameIO
	bypass func([]byte)
	mu     sync.Mutex
	recv   func([]byte)
}

func (l *frameLink) Send(frame []byte) error { return l.io.WriteFrame(frame) }

func (l *frameLink) SetReceiver(f func([]byte)) {
	l.mu.Lock()
	l.recv = f
	l.mu.Unlock()
}

func (l *frameLink) Close() error { return l.io.Close() }

// read runs until the wrapped FrameIO is closed; record captures the
// bypassed frames.
func (l *frameLink) read(record func([]byte)) {
	buf := make([]byte, 65536)
	for {
		n, err := l.io.ReadFrame(buf)
		if err != nil {
			return
		}
		frame := buf[:n]
		if !takesFaults(frame) {
			record(frame)
			l.bypass(frame)
			continue
		}
		l.mu.Lock()
		r := l.recv
		l.mu.Unlock()
		if r != nil {
			r(frame)
		}
	}
}
