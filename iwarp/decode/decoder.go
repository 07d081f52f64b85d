package decode

import (
	"net/netip"
	"slices"
	"time"
)

// Memory bounds. Everything the decoder holds is bounded by these; the
// worst case is a few hundred KiB per MPA connection (see doc.go).
const (
	// maxConns is the number of TCP connections tracked at once. A new
	// connection beyond it ends one (preferably not an MPA one) as the end
	// of the capture would.
	maxConns = 4096
	// maxAhead is how far beyond the next expected octet a segment may
	// start and still be kept; a segment further ahead is outside any
	// plausible window and ignored.
	maxAhead = 16 << 20
	// maxOOOHalf and maxOOOTotal bound the out-of-order octets held for
	// one direction and for all: beyond them the earliest hole is given up
	// as a gap.
	maxOOOHalf  = 1 << 20
	maxOOOTotal = 32 << 20
	// maxOOOSegs bounds the segments held for one direction (tiny
	// segments would otherwise cost more in bookkeeping than in octets).
	maxOOOSegs = 4096
	// maxPending bounds the octets a direction may send after its MPA
	// frame before the other direction's frame arrives.
	maxPending = 64 << 10
)

// Decoder reassembles the TCP connections of one capture and decodes the
// MPA streams among them. Feed it every frame of the file in order with
// Frame, then call Flush. The zero value is not usable; use New.
type Decoder struct {
	conns map[dirKey]*conn // both directions of each connection
	order []*conn          // the connections in the order they began (some ended)
	n     int              // connections tracked
	ooo   int              // out-of-order octets held, all streams
	emit  func(*Record)
	fi    frameInfo // the frame being processed
	rec   Record    // reused for every record
}

type dirKey struct{ src, dst netip.AddrPort }

type frameInfo struct {
	index int
	t     time.Duration
}

// New returns a decoder for one capture file.
func New() *Decoder { return &Decoder{conns: map[dirKey]*conn{}} }

// conn is one TCP connection: h[0] is the direction of the side that sent
// the SYN (or, when only the SYN-ACK was captured, the side it answered).
type conn struct {
	h     [2]*half
	mpa   bool // a direction began with an MPA Request or Reply key
	ended bool
}

func (c *conn) other(h *half) *half { return c.h[1-h.side] }

// Frame feeds one Ethernet frame: index is its 1-based number in the file
// and t its time since the first frame. emit is called for every record the
// frame completes (none, one or several), in stream order per direction.
// It reports whether the frame is a TCP segment.
func (d *Decoder) Frame(data []byte, index int, t time.Duration, emit func(*Record)) bool {
	s, ok := parseTCP(data)
	if !ok {
		return false
	}
	if s.src == s.dst {
		return true // a connection to itself: its two directions are one
	}
	d.emit, d.fi = emit, frameInfo{index, t}
	c, side := d.lookup(s.src, s.dst)
	syn, ack := s.flags&tcpSYN != 0, s.flags&tcpACK != 0
	switch {
	case syn && !ack: // an opening SYN from s.src
		if c != nil && !(side == 0 && c.h[0].isnKnown && c.h[0].isn == s.seq) {
			d.endConn(c) // the tuple is reused by a new connection
			c = nil
		}
		if c == nil {
			c, side = d.newConn(s.src, s.dst, s.vlan), 0
			c.h[0].setISN(s.seq)
		}
	case syn: // a SYN-ACK from s.src
		if c != nil && side == 1 && c.h[1].isnKnown && c.h[1].isn != s.seq {
			d.endConn(c)
			c = nil
		}
		if c == nil {
			// The SYN was not captured: the SYN-ACK acknowledges it.
			c, side = d.newConn(s.dst, s.src, s.vlan), 1
			c.h[0].setISN(s.ack - 1)
		}
		if h := c.h[side]; !h.isnKnown {
			h.setISN(s.seq)
		}
	default:
		if c == nil {
			return true // no SYN seen: a connection the capture joined late
		}
		// The SYN-ACK was not captured: the opener's first ACK
		// acknowledges it.
		if o := c.h[1]; side == 0 && ack && !o.isnKnown {
			o.setISN(s.ack - 1)
		}
	}
	h := c.h[side]
	if h.isnKnown {
		seq := s.seq
		if syn {
			seq++
		}
		h.segment(seq, s.payload, s.missing)
		if s.flags&tcpFIN != 0 {
			h.fin(seq + uint32(len(s.payload)+s.missing))
		}
	}
	if o := c.other(h); ack && o.isnKnown {
		o.acked(s.ack)
	}
	if s.flags&tcpRST != 0 || c.h[0].ended && c.h[1].ended {
		d.endConn(c)
	}
	return true
}

// Flush ends every connection as the end of the capture does: out-of-order
// data is delivered across its holes (reported as gaps), and streams that
// stop inside an FPDU or an MPA frame are reported. Records are stamped with
// the last frame of their direction. The decoder is then empty and may be
// reused for another file.
func (d *Decoder) Flush(emit func(*Record)) {
	d.emit = emit
	for _, c := range d.order {
		d.endConn(c) // in the order they began, so the output is stable
	}
	d.conns, d.order, d.n, d.ooo = map[dirKey]*conn{}, nil, 0, 0
}

func (d *Decoder) lookup(src, dst netip.AddrPort) (*conn, int) {
	c := d.conns[dirKey{src, dst}]
	if c == nil {
		return nil, 0
	}
	if c.h[0].src == src {
		return c, 0
	}
	return c, 1
}

func (d *Decoder) newConn(client, server netip.AddrPort, vlan int) *conn {
	if d.n >= maxConns {
		d.evict()
	}
	c := &conn{}
	c.h[0] = &half{d: d, c: c, side: 0, src: client, dst: server, vlan: vlan}
	c.h[1] = &half{d: d, c: c, side: 1, src: server, dst: client, vlan: vlan}
	d.conns[dirKey{client, server}] = c
	d.conns[dirKey{server, client}] = c
	d.n++
	if len(d.order) >= 2*maxConns {
		d.order = slices.DeleteFunc(d.order, func(c *conn) bool { return c.ended })
	}
	d.order = append(d.order, c)
	return c
}

// evict ends one connection to make room: the oldest that is not MPA, else
// the oldest.
func (d *Decoder) evict() {
	for len(d.order) > 0 && d.order[0].ended {
		d.order[0] = nil
		d.order = d.order[1:]
	}
	var victim *conn
	for _, c := range d.order {
		if c.ended {
			continue
		}
		if victim == nil {
			victim = c
		}
		if !c.mpa {
			victim = c
			break
		}
	}
	if victim != nil {
		d.endConn(victim)
	}
}

// endConn ends both directions of c (reporting what they leave unfinished)
// and forgets it.
func (d *Decoder) endConn(c *conn) {
	if c.ended {
		return
	}
	c.ended = true
	for _, h := range c.h {
		h.end()
	}
	delete(d.conns, dirKey{c.h[0].src, c.h[0].dst})
	delete(d.conns, dirKey{c.h[1].src, c.h[1].dst})
	d.n--
}

// half is one direction of a TCP connection: the reassembly of its byte
// stream (here) and the MPA decoding of it (mpa.go).
type half struct {
	d        *Decoder
	c        *conn
	side     int
	src, dst netip.AddrPort
	vlan     int

	// TCP reassembly. pos is the stream offset of the next octet expected
	// (0 is the first octet after the SYN); every octet before it was
	// delivered or reported missing.
	isnKnown bool
	isn      uint32
	pos      uint64
	ooo      []oooSeg // segments ahead of pos, sorted by start
	oooBytes int
	finKnown bool
	finOff   uint64
	ended    bool
	last     frameInfo // the last frame that carried octets of this direction

	mpaState
}

// oooSeg is a segment held until the octets before it arrive.
type oooSeg struct {
	start   uint64
	data    []byte // a copy
	missing int    // octets after data that the capture cut off
}

func (h *half) setISN(isn uint32) { h.isn, h.isnKnown = isn, true }

// seqAt is the sequence number of stream offset off.
func (h *half) seqAt(off uint64) uint32 { return h.isn + 1 + uint32(off) }

// offOf places seq relative to pos: sequence numbers are 32-bit, so the
// nearest interpretation wins.
func (h *half) offOf(seq uint32) int64 {
	return int64(h.pos) + int64(int32(seq-h.seqAt(h.pos)))
}

// segment takes the payload of one segment starting at sequence number
// seq; missing more octets follow that the capture cut off.
func (h *half) segment(seq uint32, payload []byte, missing int) {
	total := len(payload) + missing
	if h.ended || total == 0 {
		return
	}
	h.last = h.d.fi
	if !h.live() {
		h.dropOOO()
		return
	}
	start := h.offOf(seq)
	if start-int64(h.pos) > maxAhead {
		return // outside any window
	}
	end := start + int64(total)
	if h.finKnown && end > int64(h.finOff) { // nothing follows a FIN
		end = int64(h.finOff)
		if end <= start {
			return
		}
		if n := int(end - start); n < len(payload) {
			payload, missing = payload[:n], 0
		} else {
			missing = n - len(payload)
		}
	}
	if end <= int64(h.pos) {
		return // a retransmission of what was delivered
	}
	if start < 0 { // before the stream's start: only a retransmission overlaps it
		skip := -start
		if skip >= int64(len(payload)) {
			missing -= int(skip - int64(len(payload)))
			payload = nil
		} else {
			payload = payload[skip:]
		}
		start = 0
	}
	if uint64(start) <= h.pos {
		h.deliver(uint64(start), payload, missing)
		h.drain()
	} else {
		h.hold(uint64(start), payload, missing)
	}
	h.checkFin()
}

// deliver passes on the part of a segment (starting at start <= pos) that
// lies at or beyond pos.
func (h *half) deliver(start uint64, payload []byte, missing int) {
	if skip := h.pos - start; skip < uint64(len(payload)) {
		p := payload[skip:]
		h.onData(h.pos, p, true)
		h.pos += uint64(len(p))
	}
	if end := start + uint64(len(payload)+missing); end > h.pos {
		n := end - h.pos
		h.onGap(h.pos, n)
		h.pos = end
	}
}

// hold keeps a segment that starts beyond pos, giving up the earliest holes
// when too much is held.
func (h *half) hold(start uint64, payload []byte, missing int) {
	i, _ := slices.BinarySearchFunc(h.ooo, start, func(s oooSeg, v uint64) int {
		switch {
		case s.start < v:
			return -1
		case s.start > v:
			return 1
		}
		return 0
	})
	h.ooo = slices.Insert(h.ooo, i, oooSeg{start, slices.Clone(payload), missing})
	h.oooBytes += len(payload)
	h.d.ooo += len(payload)
	for len(h.ooo) > 0 && (h.oooBytes > maxOOOHalf || h.d.ooo > maxOOOTotal || len(h.ooo) > maxOOOSegs) {
		h.skipHole()
	}
}

// skipHole reports the octets before the first held segment as missing and
// delivers what then follows in order.
func (h *half) skipHole() {
	if s := h.ooo[0].start; s > h.pos {
		h.onGap(h.pos, s-h.pos)
		h.pos = s
	}
	h.drain()
}

// drain delivers the held segments that pos has reached.
func (h *half) drain() {
	for len(h.ooo) > 0 && h.ooo[0].start <= h.pos {
		s := h.ooo[0]
		h.ooo[0] = oooSeg{}
		h.ooo = h.ooo[1:]
		h.oooBytes -= len(s.data)
		h.d.ooo -= len(s.data)
		if !h.live() {
			h.dropOOO()
			return
		}
		h.deliver(s.start, s.data, s.missing)
	}
	if len(h.ooo) == 0 {
		h.ooo = nil
	}
}

func (h *half) dropOOO() {
	h.d.ooo -= h.oooBytes
	h.ooo, h.oooBytes = nil, 0
}

// acked learns that the receiver acknowledged up to sequence number seq:
// held segments up to there will not be retransmitted, so the holes before
// them are octets the capture missed, reported now rather than at the end.
func (h *half) acked(seq uint32) {
	if h.ended || len(h.ooo) == 0 {
		return
	}
	off := h.offOf(seq)
	for len(h.ooo) > 0 && int64(h.ooo[0].start) <= off && h.ooo[0].start > h.pos {
		h.skipHole()
	}
}

// fin records where the stream ends.
func (h *half) fin(seq uint32) {
	if h.ended || h.finKnown {
		return
	}
	off := max(h.offOf(seq), int64(h.pos))
	for _, s := range h.ooo {
		off = max(off, int64(s.start)+int64(len(s.data)+s.missing))
	}
	h.finKnown, h.finOff = true, uint64(off)
	h.checkFin()
}

func (h *half) checkFin() {
	if h.finKnown && (h.pos >= h.finOff || !h.live()) && !h.ended {
		h.end()
	}
}

// end closes the direction: what is held is delivered across its holes,
// and the MPA layer reports an unfinished FPDU or frame. Its records are
// stamped with the last frame that carried octets of the direction.
func (h *half) end() {
	if h.ended {
		return
	}
	if h.last.index > 0 {
		saved := h.d.fi
		h.d.fi = h.last
		defer func() { h.d.fi = saved }()
	}
	for len(h.ooo) > 0 {
		h.skipHole()
	}
	h.dropOOO()
	h.ended = true
	h.onEnd()
}
