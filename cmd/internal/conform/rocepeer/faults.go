package rocepeer

import (
	"sync"

	"github.com/rnic/rnic/roce/wire"
)

// Frame rewrites for the cases' Breaks: each returns the frame to pass on
// (edited in place), or nil to drop it. Frames that are not RoCEv2 pass
// unchanged. An edit that changes covered bytes re-seals the ICRC, so the
// broken DUT's frames are well-formed and only their content is wrong.

// Rewrite applies edit to every RoCEv2 frame match accepts and re-seals
// it.
func Rewrite(match func(p *wire.Packet) bool, edit func(f *wire.Frame)) func([]byte) []byte {
	return func(b []byte) []byte {
		var f wire.Frame
		if f.Decode(b, 0) != nil || !match(&f.Packet) {
			return b
		}
		edit(&f)
		f.Seal()
		return b
	}
}

// Drop drops every RoCEv2 frame match accepts.
func Drop(match func(p *wire.Packet) bool) func([]byte) []byte {
	return func(b []byte) []byte {
		var f wire.Frame
		if f.Decode(b, 0) == nil && match(&f.Packet) {
			return nil
		}
		return b
	}
}

// Opcodes matches packets with one of the opcodes.
func Opcodes(ops ...wire.Opcode) func(p *wire.Packet) bool {
	return func(p *wire.Packet) bool {
		for _, o := range ops {
			if p.Opcode() == o {
				return true
			}
		}
		return false
	}
}

// Syndromes matches acknowledgements (ACK, atomic ACK, READ responses with
// an AETH) whose AETH syndrome type is t.
func Syndromes(t wire.AckType) func(p *wire.Packet) bool {
	return func(p *wire.Packet) bool {
		a := p.AETH()
		return a != nil && a.Syndrome().Type() == t
	}
}

// SetSyndrome rewrites an AETH syndrome.
func SetSyndrome(s wire.Syndrome) func(f *wire.Frame) {
	return func(f *wire.Frame) {
		if a := f.Packet.AETH(); a != nil {
			a.Encode(s, a.MSN())
		}
	}
}

// Repeats drops every RC or UC request packet whose (destination QP, PSN)
// was already sent once: a requester that never retransmits. It keeps the
// PSNs it saw; Reset forgets them (a Break's Apply calls it).
type Repeats struct {
	mu   sync.Mutex
	seen map[uint64]bool
}

// Reset forgets every PSN seen.
func (r *Repeats) Reset() {
	r.mu.Lock()
	r.seen = nil
	r.mu.Unlock()
}

// Fault is the frame fault.
func (r *Repeats) Fault(b []byte) []byte {
	var f wire.Frame
	if f.Decode(b, 0) != nil {
		return b
	}
	p := &f.Packet
	info := p.Info()
	if p.Opcode().Transport() == wire.TransportUD || info.Kind == wire.KindAck ||
		info.Kind == wire.KindAtomicAck || info.Kind == wire.KindReadResponse {
		return b
	}
	k := uint64(p.BTH().DestQP())<<24 | uint64(p.BTH().PSN())
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[uint64]bool{}
	}
	if r.seen[k] {
		return nil
	}
	r.seen[k] = true
	return b
}

// Once passes the first frame match accepts and drops every later one: a
// DUT that never asks again. Reset starts over (a Break's Apply calls it).
type Once struct {
	Match func(p *wire.Packet) bool
	mu    sync.Mutex
	seen  bool
}

// Reset forgets the frame passed.
func (o *Once) Reset() {
	o.mu.Lock()
	o.seen = false
	o.mu.Unlock()
}

// Fault is the frame fault.
func (o *Once) Fault(b []byte) []byte {
	var f wire.Frame
	if f.Decode(b, 0) != nil || !o.Match(&f.Packet) {
		return b
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen {
		return nil
	}
	o.seen = true
	return b
}

// SetTTL rewrites the IPv4 TTL (or IPv6 hop limit) of every RoCEv2 frame
// and fixes the IPv4 header checksum; the ICRC does not cover the field.
func SetTTL(ttl uint8) func([]byte) []byte {
	return func(b []byte) []byte {
		var f wire.Frame
		if f.Decode(b, 0) != nil {
			return b
		}
		ip := f.IP()
		if f.IPv6 {
			ip[7] = ttl
			return b
		}
		ip[8] = ttl
		ip[10], ip[11] = 0, 0
		s := ^ipSum(ip)
		ip[10], ip[11] = byte(s>>8), byte(s)
		return b
	}
}

// CutUD shortens the payload of UD SENDs longer than n bytes to n (the
// lengths and the ICRC follow): a DUT that truncates instead of dropping.
func CutUD(n int) func([]byte) []byte {
	return func(b []byte) []byte {
		var f wire.Frame
		if f.Decode(b, 0) != nil || f.Packet.Opcode().Transport() != wire.TransportUD || len(f.Packet.Payload()) <= n {
			return b
		}
		e := f.Encap()
		h := f.Packet.Headers()
		return wire.AppendFrame(nil, &e, &h, f.Packet.Payload()[:n])
	}
}
