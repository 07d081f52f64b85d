package iwport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/kerneltcp"
	"github.com/rnic/rnic/transport/stream/streamcap"
)

// Errors of Recv and RecvMPA.
var (
	// ErrTimeout: nothing arrived within the bound.
	ErrTimeout = errors.New("iwport: nothing from the DUT in time")
	// ErrClosed: the DUT closed or reset the stream (Closed says how).
	ErrClosed = errors.New("iwport: the DUT's stream ended")
)

// Port is the tester's end of one TCP connection with the DUT. Its methods
// are safe for one goroutine (the case runner); the stream's callbacks
// run on the connection's own goroutines.
type Port struct {
	conn stream.Conn
	pcap *pcap.Writer

	mu       sync.Mutex
	cond     *sync.Cond
	rx       []byte // received, not consumed
	rxOff    uint64 // stream offset of rx[0]
	chunks   []chunk
	closeErr error // set when the stream ended
	closedAt time.Time

	mpaDone bool // our and the DUT's MPA frames are through
	txOff   uint32
	tx      wire.Framing
	dfr     *wire.Deframer
}

// chunk remembers where in the capture a piece of the received stream is.
type chunk struct {
	end   uint64 // stream offset after the chunk
	frame int
}

// Dial connects from local (invalid: any) to the DUT listening at remote,
// over n (nil: the host's TCP). pcap, if not nil, records the
// conversation.
func Dial(ctx context.Context, n stream.Network, local netip.Addr, remote netip.AddrPort, pcap *pcap.Writer) (*Port, error) {
	type dialed struct {
		c   stream.Conn
		err error
	}
	ch := make(chan dialed, 1)
	cancel := network(n).Dial(local, remote, func(c stream.Conn, err error) { ch <- dialed{c, err} })
	var d dialed
	select {
	case d = <-ch:
	case <-ctx.Done():
		cancel()
		if d = <-ch; d.c != nil {
			d.c.Abort()
		}
		d.err = ctx.Err()
	}
	if d.err != nil {
		return nil, fmt.Errorf("iwport: connect to the DUT at %v: %w", remote, d.err)
	}
	return newPort(d.c, pcap), nil
}

func network(n stream.Network) stream.Network {
	if n == nil {
		return &kerneltcp.Network{}
	}
	return n
}

// Listener waits for the DUT's connection.
type Listener struct {
	l     stream.Listener
	pcap  *pcap.Writer
	conns chan stream.Conn
}

// Listen listens on addr (port 0: any free port) of n (nil: the host's
// TCP) for the DUT.
func Listen(n stream.Network, addr netip.AddrPort, pcap *pcap.Writer) (*Listener, error) {
	sl, err := network(n).Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("iwport: listen on %v: %w", addr, err)
	}
	l := &Listener{l: sl, pcap: pcap, conns: make(chan stream.Conn, 4)}
	sl.SetAcceptor(func(c stream.Conn) {
		select {
		case l.conns <- c:
		default:
			c.Abort()
		}
	})
	return l, nil
}

// Addr is the address listened on.
func (l *Listener) Addr() netip.AddrPort { return l.l.Addr() }

// Accept waits for the DUT's connection.
func (l *Listener) Accept(ctx context.Context) (*Port, error) {
	select {
	case c := <-l.conns:
		return newPort(c, l.pcap), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("iwport: no connection from the DUT on %v: %w", l.Addr(), ctx.Err())
	}
}

// Close stops listening.
func (l *Listener) Close() error { return l.l.Close() }

func newPort(c stream.Conn, pcap *pcap.Writer) *Port {
	if pcap != nil {
		c = streamcap.TeeConnWith(c, pcap, streamcap.TeeConfig{Now: time.Now, NewFramer: func() streamcap.Framer { return iwarp.NewCaptureFramer() }})
	}
	p := &Port{conn: c, pcap: pcap}
	p.cond = sync.NewCond(&p.mu)
	c.SetReceiver(p.onData, p.onClose)
	return p
}

func (p *Port) onData(b []byte) {
	p.mu.Lock()
	p.rx = append(p.rx, b...)
	end := p.rxOff + uint64(len(p.rx))
	p.chunks = append(p.chunks, chunk{end: end, frame: p.lastFrame()})
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *Port) onClose(err error) {
	p.mu.Lock()
	if err == nil {
		err = io.EOF
	}
	p.closeErr, p.closedAt = err, time.Now()
	p.cond.Broadcast()
	p.mu.Unlock()
}

// lastFrame is the number of the latest data frame in the capture (0
// without one): the tee writes a chunk's segments, then our ACK.
func (p *Port) lastFrame() int {
	if p.pcap == nil {
		return 0
	}
	return max(p.pcap.Frames()-1, 0)
}

// frameOf returns the capture frame that carried stream offset off.
// Caller holds mu.
func (p *Port) frameOf(off uint64) int {
	for _, c := range p.chunks {
		if off < c.end {
			return c.frame
		}
	}
	return 0
}

// consume drops n received octets. Caller holds mu.
func (p *Port) consume(n int) {
	p.rx = p.rx[n:]
	p.rxOff += uint64(n)
	i := 0
	for i < len(p.chunks)-1 && p.chunks[i].end <= p.rxOff {
		i++
	}
	p.chunks = p.chunks[i:]
}

// LocalAddr and RemoteAddr are the connection's addresses.
func (p *Port) LocalAddr() netip.AddrPort  { return p.conn.LocalAddr() }
func (p *Port) RemoteAddr() netip.AddrPort { return p.conn.RemoteAddr() }

// SendRaw writes b as it is and returns the capture frame of its first
// segment (0 without a capture).
func (p *Port) SendRaw(b []byte) (int, error) {
	frame := 0
	if p.pcap != nil {
		frame = p.pcap.Frames() + 1
	}
	if _, err := p.conn.Write(b); err != nil {
		return frame, fmt.Errorf("iwport: send: %w", err)
	}
	return frame, nil
}

// SendMPA sends the MPA Request or Reply f describes. It fails only on a
// stream error: private data above 512 octets is a case's business, so
// the frame is then written with the PD_Length it really has.
func (p *Port) SendMPA(f *wire.MPAFields) (int, error) {
	b, err := wire.AppendMPAFrame(nil, f)
	if errors.Is(err, wire.ErrMPAPrivateData) {
		small := *f
		small.PrivateData = nil
		b, _ = wire.AppendMPAFrame(nil, &small)
		b = append(b, f.PrivateData...)
		pd := len(b) - wire.MPAHeaderLen
		b[18], b[19] = byte(pd>>8), byte(pd)
	}
	return p.SendRaw(b)
}

// MPA is an MPA frame the DUT sent.
type MPA struct {
	wire.MPAFields
	Raw   []byte // the whole frame
	Frame int    // capture frame
}

// RecvMPA waits up to d for the DUT's MPA Request or Reply. An invalid
// frame (bad key, PD_Length above 512) is an error naming it.
func (p *Port) RecvMPA(d time.Duration) (*MPA, error) {
	var m *MPA
	err := p.wait(d, func() (bool, error) {
		f, n, err := wire.ParseMPAFrame(p.rx)
		if err == wire.ErrIncomplete {
			return false, nil
		}
		if err != nil {
			return true, fmt.Errorf("iwport: the DUT's MPA frame is invalid: %w (% x)", err, p.rx[:min(len(p.rx), 20)])
		}
		raw := append([]byte(nil), f...)
		m = &MPA{MPAFields: wire.MPAFrame(raw).Fields(), Raw: raw, Frame: p.frameOf(p.rxOff)}
		p.consume(n)
		return true, nil
	})
	return m, err
}

// SetFraming starts full operation with the framing of each direction: tx
// for what the tester sends, rx for what the DUT sends (wire.Negotiate
// gives both from the two MPA frames). Octets the DUT sent after its MPA
// frame are kept.
func (p *Port) SetFraming(tx, rx wire.Framing) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mpaDone, p.tx, p.txOff = true, tx, 0
	p.dfr = wire.NewDeframer(rx, wire.MaxULPDU)
}

// Framing returns the framing the tester sends with.
func (p *Port) Framing() wire.Framing {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tx
}

// wait calls try (with mu held) until it reports done, the stream ends
// (ErrClosed, after try had its chance with what arrived) or d passes.
func (p *Port) wait(d time.Duration, try func() (bool, error)) error {
	deadline := time.Now().Add(d)
	t := time.AfterFunc(d, func() { p.mu.Lock(); p.cond.Broadcast(); p.mu.Unlock() })
	defer t.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if done, err := try(); done {
			return err
		}
		if p.closeErr != nil {
			return fmt.Errorf("%w: %v", ErrClosed, p.closeErr)
		}
		if !time.Now().Before(deadline) {
			return ErrTimeout
		}
		p.cond.Wait()
	}
}

// End is how the DUT's stream ended.
type End struct {
	Why error     // io.EOF for an orderly close, stream.ErrReset for a reset
	At  time.Time // when the tester saw it
}

// Closed waits up to d for the stream to end and says how, or returns
// ErrTimeout. Octets still arriving meanwhile are kept for Recv.
func (p *Port) Closed(d time.Duration) (End, error) {
	var e End
	err := p.wait(d, func() (bool, error) {
		if p.closeErr == nil {
			return false, nil
		}
		e = End{Why: p.closeErr, At: p.closedAt}
		return true, nil
	})
	return e, err
}

// Close closes the tester's side in order; Abort resets the connection.
func (p *Port) Close() error { return p.conn.Close() }
func (p *Port) Abort() error { return p.conn.Abort() }
