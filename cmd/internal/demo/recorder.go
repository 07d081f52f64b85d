package demo

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/roce/wire"
)

// recorder wraps each NIC's link and keeps a one-line description of every
// frame the NIC sends, in sending order across both NICs, so each step can
// show what crossed the wire.
type recorder struct {
	mu    sync.Mutex
	lines []string
	names map[[6]byte]string
	// ports are the NICs' RoCEv2 ports besides 4791.
	ports []uint16
	// flush, if set, pushes buffered frames to add (the TAP mode's
	// capture point) before take.
	flush func() error
}

// newRecorder records frames to the NICs' RoCEv2 ports (4791 if zero).
func newRecorder(ports ...uint16) *recorder {
	return &recorder{names: map[[6]byte]string{}, ports: ports}
}

// wrap returns an endpoint that records what name sends over ep.
func (r *recorder) wrap(name string, mac [6]byte, ep embedded.Link) embedded.Link {
	r.name(mac, name)
	return &recordingEndpoint{Link: ep, r: r, name: name}
}

type recordingEndpoint struct {
	embedded.Link
	r    *recorder
	name string
}

func (e *recordingEndpoint) Send(frame []byte) error {
	e.r.add(e.name, frame)
	return e.Link.Send(frame)
}

func (r *recorder) add(from string, frame []byte) {
	var f wire.Frame
	line := ""
	if err := r.decode(&f, frame); err != nil {
		line = fmt.Sprintf("%s sent a frame that does not decode: %v", from, err)
	} else {
		line = describe(from, r.peer(frame), &f)
	}
	r.mu.Lock()
	r.lines = append(r.lines, line)
	r.mu.Unlock()
}

// decode decodes a frame sent to one of the NICs' ports.
func (r *recorder) decode(f *wire.Frame, frame []byte) error {
	err := f.Decode(frame, 0)
	for _, p := range r.ports {
		if !errors.Is(err, wire.ErrNotRoCEPort) {
			break
		}
		err = f.Decode(frame, p)
	}
	return err
}

// name names the NIC with the given MAC; in the TAP mode frames may be
// recorded meanwhile.
func (r *recorder) name(mac [6]byte, name string) {
	r.mu.Lock()
	r.names[mac] = name
	r.mu.Unlock()
}

// nameOf names the frame's sender by its source MAC.
func (r *recorder) nameOf(frame []byte) string { return r.nameAt(frame[6:12]) }

func (r *recorder) peer(frame []byte) string { return r.nameAt(frame[:6]) }

func (r *recorder) nameAt(b []byte) string {
	var mac [6]byte
	copy(mac[:], b)
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.names[mac]; ok {
		return n
	}
	return "?"
}

// take returns and forgets the lines recorded so far.
func (r *recorder) take() []string {
	if r.flush != nil {
		r.flush()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.lines
	r.lines = nil
	return l
}

// describe puts one frame in words: who to whom, opcode, QPN, PSN, and the
// header fields a student needs to follow the exchange.
func describe(from, to string, f *wire.Frame) string {
	p := &f.Packet
	bth := p.BTH()
	var b strings.Builder
	fmt.Fprintf(&b, "%s -> %s  %-32s dest_qp=%#06x psn=%d", from, to, p.Opcode(), bth.DestQP(), bth.PSN())
	if bth.AckReq() {
		b.WriteString(" ackreq")
	}
	if bth.SE() {
		b.WriteString(" se")
	}
	if r := p.RETH(); r != nil {
		fmt.Fprintf(&b, " va=%#x rkey=%#x len=%d", r.VA(), r.RKey(), r.DMALength())
	}
	if a := p.AtomicETH(); a != nil {
		fmt.Fprintf(&b, " va=%#x rkey=%#x swap/add=%d compare=%d", a.VA(), a.RKey(), a.SwapAdd(), a.Compare())
	}
	if a := p.AETH(); a != nil {
		fmt.Fprintf(&b, " [%v msn=%d]", a.Syndrome(), a.MSN())
	}
	if a := p.AtomicAckETH(); a != nil {
		fmt.Fprintf(&b, " original=%d", a.OrigData())
	}
	if i := p.ImmDt(); i != nil {
		fmt.Fprintf(&b, " imm=%#x", i.Imm())
	}
	if d := p.DETH(); d != nil {
		fmt.Fprintf(&b, " qkey=%#x src_qp=%#06x", d.QKey(), d.SrcQP())
	}
	if n := len(p.Payload()); n > 0 {
		fmt.Fprintf(&b, " payload=%dB", n)
	}
	return b.String()
}
