package decode

import (
	"encoding/binary"
	"errors"

	"github.com/rnic/rnic/iwarp/wire"
)

// The MPA layer of one direction: a state machine fed with the in-order
// octets of the stream (onData, one TCP segment's worth at a time), the
// holes in it (onGap) and its end (onEnd).

type state uint8

const (
	// stSetup: the first octets; are they an MPA Request or Reply?
	stSetup state = iota
	// stWait: this direction's MPA frame was seen; its FPDUs are held
	// until the other direction's frame says how they are framed.
	stWait
	// stFPDU: full operation; the Deframer finds the FPDUs.
	stFPDU
	// stResync: the stream broke (a gap, a framing error, an FPDU that
	// does not decode); looking for an FPDU that decodes at the start of a
	// TCP segment (or right after the undecodable FPDU).
	stResync
	// stRefuse: no payload may follow (the connection was rejected); the
	// first octets that do are reported once.
	stRefuse
	// stNotMPA: the direction does not begin with an MPA frame. Ignored,
	// unless the other direction does: then it is reported once.
	stNotMPA
	// stDead: reported, or not MPA; the rest is ignored.
	stDead
)

// mpaState is the MPA half of a half.
type mpaState struct {
	st      state
	setup   []byte        // stSetup: the octets so far (at most an MPA frame's worth)
	frame   wire.MPAFrame // this direction's MPA frame (a copy)
	pending []pendingEv   // stWait: what arrived after the frame
	pendLen int
	framing wire.Framing
	df      *wire.Deframer
	rs      resync

	// stNotMPA and stRefuse: what to report, where, if it comes to that.
	why    string
	whyFI  frameInfo
	whyOff uint64
	whyLen int64
}

// pendingEv is octets (a copy) or a hole, held in stWait.
type pendingEv struct {
	off  uint64
	data []byte
	gap  uint64
	cand bool
}

// resync holds the stream after a break: candidate FPDU starts and the
// octets from the first of them.
type resync struct {
	buf    []byte
	base   uint64 // stream offset of buf[0]
	starts []int  // candidate offsets in buf, ascending
}

// live reports whether the direction's octets still matter (so TCP must
// reassemble them).
func (h *half) live() bool {
	switch h.st {
	case stNotMPA, stDead:
		return false
	}
	return true
}

// record returns the shared Record, reset for a record of this direction
// in the current frame.
func (h *half) record(k Kind, off uint64) *Record {
	r := &h.d.rec
	*r = Record{Kind: k, Index: h.d.fi.index, Time: h.d.fi.t, Src: h.src, Dst: h.dst, VLAN: h.vlan, Seq: off + 1, Ctl: -1}
	return r
}

func (h *half) emit(r *Record) {
	if h.d.emit != nil {
		h.d.emit(r)
	}
}

// fail reports the problem and gives the direction up.
func (h *half) fail(reason string, off uint64, n int64) {
	r := h.record(KindUnknown, off)
	r.Reason, r.Bytes = reason, n
	h.emit(r)
	h.die()
}

func (h *half) die() {
	h.st = stDead
	h.setup, h.pending, h.pendLen, h.df, h.rs = nil, nil, 0, nil, resync{}
	h.dropOOO()
}

// notMPA marks the direction as not beginning with an MPA frame, to be
// reported if the connection is (or turns out to be) MPA.
func (h *half) notMPA(reason string, off uint64, n int64) {
	h.st, h.why, h.whyFI, h.whyOff, h.whyLen = stNotMPA, reason, h.d.fi, off, n
	h.setup = nil
	h.dropOOO()
	if h.c.mpa {
		h.reportNotMPA()
	}
}

func (h *half) reportNotMPA() {
	saved := h.d.fi
	h.d.fi = h.whyFI
	h.fail(h.why, h.whyOff, h.whyLen)
	h.d.fi = saved
}

// markMPA records that the connection speaks MPA and reports a direction
// already found not to.
func (c *conn) markMPA() {
	if c.mpa {
		return
	}
	c.mpa = true
	for _, h := range c.h {
		if h.st == stNotMPA {
			h.reportNotMPA()
		}
	}
}

// chunk is octets at a stream offset; cand says a TCP segment starts there
// (a place to look for an FPDU after a break).
type chunk struct {
	off  uint64
	p    []byte
	cand bool
}

// onData takes in-order octets at stream offset off. Breaks and
// resynchronisation hand octets back as work instead of recursing, so the
// stack stays flat whatever the input.
func (h *half) onData(off uint64, p []byte, cand bool) {
	work := []chunk{{off, p, cand}}
	for len(work) > 0 {
		w := work[0]
		work = work[1:]
		var more []chunk
		switch h.st {
		case stSetup:
			h.setupData(w.off, w.p)
		case stWait:
			h.pend(pendingEv{off: w.off, data: w.p, cand: w.cand})
		case stFPDU:
			if rest, ok := h.fpduData(w.off, w.p); ok {
				more = []chunk{rest}
			}
		case stResync:
			more = h.resyncData(w.off, w.p, w.cand)
		case stRefuse:
			h.fail(h.why, w.off, 0)
		}
		if len(more) > 0 {
			work = append(more, work...)
		}
	}
}

func (h *half) onGap(off, n uint64) {
	switch h.st {
	case stSetup:
		if len(h.setup) >= wire.MPAKeyLen || h.c.mpa {
			h.c.markMPA()
			h.fail(ReasonGap, off, int64(n))
		} else {
			h.notMPA(ReasonGap, off, int64(n))
		}
	case stWait:
		h.pend(pendingEv{off: off, gap: n})
	case stFPDU:
		r := h.record(KindUnknown, off)
		r.Reason, r.Bytes = ReasonGap, int64(n)
		h.emit(r)
		h.broken()
	case stResync:
		// Still broken: a candidate cannot span the hole; the octets
		// after it are candidates again. Not reported again.
		h.rs.buf, h.rs.starts = h.rs.buf[:0], h.rs.starts[:0]
	case stRefuse:
		h.fail(h.why, off, int64(n))
	}
}

func (h *half) onEnd() {
	switch h.st {
	case stSetup:
		if n := len(h.setup); n >= wire.MPAKeyLen || n > 0 && h.c.mpa {
			h.c.markMPA()
			h.fail(ReasonIncompleteMPA, 0, int64(n))
			return
		} else if n > 0 {
			h.notMPA(ReasonIncompleteMPA, 0, int64(n))
			return
		}
	case stWait:
		// The other direction may still answer (and learn its framing
		// from this frame), so the state stays.
		if len(h.pending) > 0 {
			off := h.pending[0].off
			r := h.record(KindUnknown, off)
			r.Reason, r.Bytes = ReasonNotNegotiated, int64(h.pendLen)
			h.emit(r)
		}
		h.pending, h.pendLen = nil, 0
		return
	case stFPDU:
		if n := h.df.Buffered(); n > 0 {
			r := h.record(KindUnknown, h.pos-uint64(n))
			r.Reason, r.Bytes = ReasonIncompleteFPDU, int64(n)
			h.emit(r)
		}
	case stNotMPA:
		return // may still be reported
	}
	h.die()
}

// setupData collects the first octets until they make an MPA frame or
// cannot.
func (h *half) setupData(off uint64, p []byte) {
	k := min(len(p), wire.MPAHeaderLen+wire.MPAMaxPrivate-len(h.setup))
	h.setup = append(h.setup, p[:k]...)
	f, n, err := wire.ParseMPAFrame(h.setup)
	switch {
	case errors.Is(err, wire.ErrIncomplete):
		return
	case errors.Is(err, wire.ErrMPABadKey):
		h.notMPA(ReasonBadKey, 0, 0)
		return
	case err != nil: // the key matched: MPA, but a broken frame
		h.c.markMPA()
		h.fail(errName(err), 0, 0)
		return
	}
	h.frame = append(wire.MPAFrame(nil), f...)
	h.st = stWait
	r := h.record(KindMPA, 0)
	r.MPA = h.frame
	h.emit(r)
	rest, tail := h.setup[n:], p[k:]
	h.setup = nil
	if len(rest) > 0 {
		h.pend(pendingEv{off: uint64(n), data: rest, cand: true})
	}
	if len(tail) > 0 && h.st == stWait {
		h.pend(pendingEv{off: off + uint64(k), data: tail})
	}
	h.c.markMPA()
	h.c.negotiate(h)
}

// pend holds an event until the framing is known.
func (h *half) pend(ev pendingEv) {
	if h.st != stWait {
		return
	}
	if h.pendLen+len(ev.data) > maxPending {
		off := ev.off
		if len(h.pending) > 0 {
			off = h.pending[0].off
		}
		h.fail(ReasonNotNegotiated, off, int64(h.pendLen+len(ev.data)))
		return
	}
	ev.data = append([]byte(nil), ev.data...)
	h.pending = append(h.pending, ev)
	h.pendLen += len(ev.data)
}

// negotiate is called when h has parsed its MPA frame: with the other
// direction's frame it sets both framings and replays what was held.
func (c *conn) negotiate(h *half) {
	o := c.other(h)
	if h.st != stWait || o.st != stWait {
		return // o's frame is still to come, or never will
	}
	if o.frame.IsReply() == h.frame.IsReply() {
		h.fail(ReasonNotReply, 0, 0)
		return
	}
	ini, resp := h, o
	if h.frame.IsReply() {
		ini, resp = o, h
	}
	if rep := resp.frame; rep.Reject() {
		for _, x := range c.h {
			x.st, x.why = stRefuse, ReasonRejected
		}
	} else {
		ini.framing, resp.framing = wire.Negotiate(ini.frame, resp.frame)
		for _, x := range c.h {
			x.st, x.df = stFPDU, wire.NewDeframer(x.framing, wire.MaxULPDU)
		}
	}
	for _, x := range c.h {
		evs := x.pending
		x.pending, x.pendLen = nil, 0
		for _, ev := range evs {
			if ev.data != nil {
				x.onData(ev.off, ev.data, ev.cand)
			} else {
				x.onGap(ev.off, ev.gap)
			}
		}
	}
}

// fpduData deframes octets at stream offset off. After a break it returns
// the octets left to look at again (in the new state).
func (h *half) fpduData(off uint64, p []byte) (chunk, bool) {
	for len(p) > 0 {
		r, n, err := h.df.Next(p)
		off, p = off+uint64(n), p[n:]
		if errors.Is(err, wire.ErrIncomplete) {
			return chunk{}, false
		}
		if err != nil { // framing lost (fpdu_too_long, mpa_bad_marker)
			rec := h.record(KindUnknown, off-uint64(h.df.Buffered()))
			rec.Reason = errName(err)
			h.emit(rec)
			h.broken()
			return chunk{off, p, false}, true // mid-segment: no candidate here
		}
		if !h.emitFPDU(&r, off-uint64(r.WireLen)) && !(h.framing.CRC && r.CRCOK) && !h.framing.Markers {
			// Neither a CRC nor markers vouch for the framing: look
			// for an FPDU that decodes, starting right here.
			h.broken()
			return chunk{off, p, true}, true
		}
	}
	return chunk{}, false
}

// emitFPDU emits the FPDU's record and reports whether its ULPDU decoded.
func (h *half) emitFPDU(d *wire.Deframed, off uint64) bool {
	r := h.record(KindFPDU, off)
	r.FPDU, r.WireLen, r.ULPDULen, r.PadLen = true, d.WireLen, len(d.ULPDU), len(d.Pad)
	r.CRCOn, r.CRCOK, r.CRC = h.framing.CRC, d.CRCOK, d.CRC
	if err := r.Segment.Decode(d.ULPDU); err != nil {
		r.Kind, r.Reason, r.Segment = KindUnknown, errName(err), wire.Segment{}
		if len(d.ULPDU) >= 2 {
			r.Ctl = int(binary.BigEndian.Uint16(d.ULPDU))
		}
		h.emit(r)
		return false
	}
	h.emit(r)
	return true
}

// broken enters resynchronisation after a problem was reported. With
// markers the deframer cannot restart mid-stream (the markers' positions
// count from the stream's first FPDU), so the direction is given up.
func (h *half) broken() {
	if h.framing.Markers {
		h.die()
		return
	}
	h.st, h.df = stResync, nil
	h.rs.buf, h.rs.starts = h.rs.buf[:0], h.rs.starts[:0]
}

// resyncData adds octets at stream offset off, a candidate FPDU start if
// cand, and tries the candidates. When one succeeds it returns the octets
// held from it on, cut where the segments were, to deframe again.
func (h *half) resyncData(off uint64, p []byte, cand bool) []chunk {
	rs := &h.rs
	if len(rs.starts) == 0 {
		if !cand {
			return nil
		}
		rs.buf = rs.buf[:0]
	}
	if len(rs.buf) == 0 {
		rs.base = off
	}
	if cand {
		rs.starts = append(rs.starts, len(rs.buf))
	}
	rs.buf = append(rs.buf, p...)
	i := 0
	for ; i < len(rs.starts); i++ {
		c := rs.buf[rs.starts[i]:]
		if len(c) < wire.LengthFieldLen {
			break
		}
		ulen := int(binary.BigEndian.Uint16(c))
		need := wire.FPDULen(ulen)
		if len(c) < need {
			if plausible(c[wire.LengthFieldLen:min(len(c), wire.LengthFieldLen+ulen)], ulen) {
				break // wait for the rest of the candidate
			}
			continue
		}
		if h.validFPDU(c[:need]) {
			rs.starts = rs.starts[i:]
			h.rs.compact()
			return h.resume()
		}
	}
	// Drop the candidates that failed and the octets before the first
	// one left.
	rs.starts = rs.starts[:copy(rs.starts, rs.starts[i:])]
	rs.compact()
	return nil
}

// compact drops the octets before the first candidate (all of them when
// there is none).
func (rs *resync) compact() {
	if len(rs.starts) == 0 {
		rs.buf = rs.buf[:0]
		return
	}
	if s := rs.starts[0]; s > 0 {
		n := copy(rs.buf, rs.buf[s:])
		rs.buf, rs.base = rs.buf[:n], rs.base+uint64(s)
		for i := range rs.starts {
			rs.starts[i] -= s
		}
	}
}

// plausible reports whether u, the first octets of a ULPDU of ulen octets,
// may still turn out to decode: so far it fails only for want of octets.
// A candidate that is already wrong does not hold up the later ones.
func plausible(u []byte, ulen int) bool {
	var s wire.Segment
	switch err := s.Decode(u); {
	case err == nil:
		return true
	case errors.Is(err, wire.ErrTruncated), errors.Is(err, wire.ErrBadLength):
		return len(u) < ulen
	}
	return false
}

// validFPDU reports whether f, a whole FPDU without markers, is one to
// resume at: its ULPDU decodes and, with CRCs, its CRC verifies.
func (h *half) validFPDU(f []byte) bool {
	var s wire.Segment
	if s.Decode(f[wire.LengthFieldLen:wire.LengthFieldLen+int(binary.BigEndian.Uint16(f))]) != nil {
		return false
	}
	end := len(f) - wire.CRCLen
	return !h.framing.CRC || wire.CRC(f[:end]) == wire.GetCRC(f[end:])
}

// resume restarts deframing at the first candidate (rs.buf[0]) and returns
// what was held, cut where the segments were. The held buffer is handed
// over (a later break starts a new one).
func (h *half) resume() []chunk {
	buf, starts, base := h.rs.buf, h.rs.starts, h.rs.base
	h.rs = resync{}
	h.st, h.df = stFPDU, wire.NewDeframer(h.framing, wire.MaxULPDU)
	out := make([]chunk, len(starts))
	for i, s := range starts {
		e := len(buf)
		if i+1 < len(starts) {
			e = starts[i+1]
		}
		out[i] = chunk{base + uint64(s), buf[s:e], true}
	}
	return out
}

// errName is the counter name of a wire error.
func errName(err error) string {
	var we wire.Error
	if errors.As(err, &we) {
		return we.Counter()
	}
	return "error"
}
