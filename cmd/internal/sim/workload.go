package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/rnic/rnic/nic/verbs"
)

// postMore keeps every QP's send queue as full as Depth allows until Ops
// operations have been posted, choosing each operation at random. The ends
// with room take turns, so a step costs the same whatever the QP count.
func (w *world) postMore() {
	for w.posted < w.cfg.Ops && len(w.hungry) > 0 {
		e := w.hungry[0]
		w.hungry[0] = nil
		w.hungry = w.hungry[1:]
		e.queued = false
		w.postOne(e)
		w.wantMore(e)
	}
}

// addEnds adds a new QP pair's ends to the world, hungry.
func (w *world) addEnds(x, y *end) {
	w.ends = append(w.ends, x, y)
	w.wantMore(x)
	w.wantMore(y)
}

// wantMore puts e on the hungry list if its send queue has room.
func (w *world) wantMore(e *end) {
	if !e.queued && len(e.out) < w.cfg.Depth {
		e.queued = true
		w.hungry = append(w.hungry, e)
	}
}

func (w *world) postOne(e *end) {
	l := w.layout()
	s := w.slotBytes()
	peer := e.peer
	kind := opKind(w.rng.IntN(5))
	if kind == kSend && len(peer.recvs) >= w.cfg.Depth {
		kind = kWrite
	}
	n := w.rng.IntN(w.cfg.MaxMsg + 1)
	w.ids++
	o := &op{kind: kind, id: w.ids, n: n}
	wr := verbs.SendWR{ID: o.id, Flags: verbs.SendSignaled}
	slot := func(k int) int { i := e.next[k]; e.next[k] = (i + 1) % w.cfg.Depth; return i }
	src := w.rng.IntN(2*s - n + 1)
	switch kind {
	case kSend:
		// The receiver's buffer first: a SEND needs a receive WQE.
		i := peer.next[2]
		peer.next[2] = (i + 1) % w.cfg.Depth
		o.dstOff = l.recv + i*s
		rwr := verbs.RecvWR{ID: o.id, SGL: []verbs.SGE{{Addr: peer.base + uint64(o.dstOff), Length: uint32(s), LKey: peer.mr.LKey()}}}
		if err := peer.qp.PostRecv(&rwr); err != nil {
			w.fail(o, fmt.Sprintf("post recv: %v", err))
			return
		}
		peer.recvs = append(peer.recvs, o)
		wr.Opcode = verbs.WRSend
		wr.SGL = []verbs.SGE{{Addr: e.base + uint64(src), Length: uint32(n), LKey: e.mr.LKey()}}
		o.expect = e.buf[src : src+n]
	case kWrite:
		o.dstOff = l.write + slot(0)*s
		wr.Opcode = verbs.WRRDMAWrite
		wr.SGL = w.split(e, src, n)
		wr.RemoteAddr, wr.RKey = peer.base+uint64(o.dstOff), peer.mr.RKey()
		o.expect = e.buf[src : src+n]
	case kRead:
		o.dstOff = l.read + slot(1)*s
		wr.Opcode = verbs.WRRDMARead
		wr.SGL = w.split(e, o.dstOff, n) // iWARP sends one Read Request per sink SGE
		wr.RemoteAddr, wr.RKey = peer.base+uint64(src), peer.mr.RKey()
		o.expect = peer.buf[src : src+n]
	case kCmpSwap, kFetchAdd:
		i := slot(3)
		o.n, o.dstOff = 8, l.atomRes+8*i
		wr.SGL = []verbs.SGE{{Addr: e.base + uint64(o.dstOff), Length: 8, LKey: e.mr.LKey()}}
		wr.RemoteAddr, wr.RKey = peer.base+uint64(l.atomWord), peer.mr.RKey()
		o.orig = peer.word
		if kind == kCmpSwap {
			wr.Opcode = verbs.WRAtomicCmpSwp
			wr.CompareAdd = peer.word
			if w.rng.IntN(2) == 0 {
				wr.CompareAdd++ // a compare that fails
			}
			wr.Swap = w.rng.Uint64()
			if wr.CompareAdd == peer.word {
				peer.word = wr.Swap
			}
		} else {
			wr.Opcode = verbs.WRAtomicFetchAdd
			wr.CompareAdd = w.rng.Uint64() >> 4
			peer.word += wr.CompareAdd
		}
	}
	if err := e.qp.PostSend(&wr); err != nil {
		w.fail(o, fmt.Sprintf("%s QP %#x: post %v: %v", e.nd.name, e.qp.QPN(), kind, err))
		w.posted++
		return
	}
	e.out = append(e.out, o)
	w.posted++
}

// split describes n bytes at off in e's buffer as one or two SGEs, so
// scatter/gather lists are exercised too.
func (w *world) split(e *end, off, n int) []verbs.SGE {
	if n < 2 || w.rng.IntN(2) == 0 {
		return []verbs.SGE{{Addr: e.base + uint64(off), Length: uint32(n), LKey: e.mr.LKey()}}
	}
	k := 1 + w.rng.IntN(n-1)
	return []verbs.SGE{
		{Addr: e.base + uint64(off), Length: uint32(k), LKey: e.mr.LKey()},
		{Addr: e.base + uint64(off+k), Length: uint32(n - k), LKey: e.mr.LKey()},
	}
}

// sendCompletion checks a send-queue completion against the oldest
// outstanding operation (completions never overtake each other on a QP).
func (w *world) sendCompletion(e *end, wc *verbs.WC) {
	if len(e.out) == 0 || e.out[0].id != wc.WRID {
		w.res.Failed++
		w.res.Failures = append(w.res.Failures, fmt.Sprintf("%s QP %#x: unexpected completion %+v", e.nd.name, e.qp.QPN(), *wc))
		return
	}
	o := e.out[0]
	e.out = e.out[1:]
	w.wantMore(e)
	if wc.Status != verbs.WCSuccess {
		w.fail(o, fmt.Sprintf("%s QP %#x: wr %d (%v) completed with %v", e.nd.name, e.qp.QPN(), o.id, o.kind, wc.Status))
		return
	}
	peer := e.peer
	switch o.kind {
	case kWrite:
		if w.iwarp {
			w.awaitLanded(peer.buf[o.dstOff:o.dstOff+o.n], o.expect)
		}
		w.compare(o, peer.buf[o.dstOff:o.dstOff+o.n], e)
	case kRead:
		w.compare(o, e.buf[o.dstOff:o.dstOff+o.n], e)
	case kCmpSwap, kFetchAdd:
		if got := binary.NativeEndian.Uint64(e.buf[o.dstOff:]); got != o.orig {
			w.mismatch(8, fmt.Sprintf("%s QP %#x: wr %d (%v) returned %#x, model %#x", e.nd.name, e.qp.QPN(), o.id, o.kind, got, o.orig))
		}
	}
	if !o.failed {
		w.res.OK++
		w.res.Bytes += int64(o.n)
	}
}

func (w *world) recvCompletion(e *end, wc *verbs.WC) {
	if len(e.recvs) == 0 || e.recvs[0].id != wc.WRID {
		w.res.Failures = append(w.res.Failures, fmt.Sprintf("%s QP %#x: unexpected receive %+v", e.nd.name, e.qp.QPN(), *wc))
		w.res.Failed++
		return
	}
	o := e.recvs[0]
	e.recvs = e.recvs[1:]
	if wc.Status != verbs.WCSuccess || wc.ByteLen != uint32(o.n) {
		w.fail(o, fmt.Sprintf("%s QP %#x: receive %d: %v byte_len %d, want %d", e.nd.name, e.qp.QPN(), o.id, wc.Status, wc.ByteLen, o.n))
		return
	}
	w.compare(o, e.buf[o.dstOff:o.dstOff+o.n], e)
}

// compare counts the bytes of got that differ from the operation's
// expected data.
func (w *world) compare(o *op, got []byte, e *end) {
	if bytes.Equal(got, o.expect) {
		return
	}
	bad := 0
	for i := range got {
		if got[i] != o.expect[i] {
			bad++
		}
	}
	w.mismatch(bad, fmt.Sprintf("%s QP %#x: wr %d (%v, %d bytes): %d bytes differ", e.nd.name, e.qp.QPN(), o.id, o.kind, o.n, bad))
}
