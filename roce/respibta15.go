package roce

import (
	"encoding/binary"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/roce/wire"
)

// The responder's side of IBTA Vol 1 1.5's two RC additions, ATOMIC WRITE
// (opcode 0x1D) and FLUSH (0x1C). Both are executed in PSN order like every
// request, take a responder resource like a READ or an atomic (so a
// duplicate is answered from it and never executed again), and are answered
// with an RDMA READ Response Only carrying no payload, as Linux rxe does
// since 6.2.
//
// ATOMIC WRITE places its 8 bytes with one 64-bit store (memory.Ref's
// AtomicWrite): a reader of the word sees the old value or the new one,
// never a mix. Like rxe it needs remote write rights, on the QP and the
// region, and an 8-byte aligned address (misaligned: invalid request NAK).
//
// FLUSH asks that what earlier requests placed be globally visible, or
// persistent, in a range or in the whole region its rkey names. Requests
// execute in PSN order and each placement is a copy into the region's
// backing memory that finished before the request's PSN was accepted, so by
// the time a FLUSH executes every earlier WRITE and ATOMIC WRITE is in that
// memory: it has nothing left to wait for. Its response leaves after those
// copies, through a syscall or a locked queue, both full memory barriers,
// so a process that sees the FLUSH complete and then reads the memory (in
// rnicd's shared mapping too) reads the data. What persistence means for
// rnic's memory is in the memory package's documentation.

// atomicWrite executes an ATOMIC WRITE: RETH with a DMA length of 8, then
// the 8-byte payload (its length the wire decoder already checked).
func (rs *responder) atomicWrite(p *wire.Packet, psn uint32) {
	qp := rs.qp
	reth := p.RETH()
	va, rkey := reth.VA(), reth.RKey()
	if reth.DMALength() != 8 {
		rs.reject(psn, checkLength)
		return
	}
	ref, f := qp.Cfg.Memory.CheckRemote(qp.Cfg.PD, qp.Cfg.QPN, rkey, va, 8, memory.RemoteWrite)
	if f == memory.Ok {
		// The payload's bytes land as they came, as rxe stores them.
		f = ref.AtomicWrite(va, binary.NativeEndian.Uint64(p.Payload()))
		ref.Release()
	}
	if f != memory.Ok {
		rs.nakAccess(psn, f)
		return
	}
	qp.s.ctr.inc(AtomicWrites)
	rs.respOnlyDone(psn, va, rkey)
}

// flushRequest executes a FLUSH: its FETH (placement types and
// selectivity, checked by checkOpValid) and its RETH (the range; for a
// whole-region FLUSH only the rkey counts). The region must grant every
// placement type asked for: if not, or if the range leaves the region, a
// remote access error NAK (rxe's answer to a placement type violation).
func (rs *responder) flushRequest(p *wire.Packet, psn uint32) {
	qp := rs.qp
	need, _ := flushNeeds(p.FETH())
	reth := p.RETH()
	va, rkey, n := reth.VA(), reth.RKey(), reth.DMALength()
	if c := checkDMALength(n); c != checkOK {
		rs.reject(psn, c) // C9-94 holds for every RETH, as rxe checks it
		return
	}
	whole := p.FETH().Selectivity() == wire.FlushSelectWholeMR
	if f := qp.Cfg.Memory.CheckFlush(qp.Cfg.PD, qp.Cfg.QPN, rkey, va, n, need, whole); f != memory.Ok {
		rs.nakAccess(psn, f)
		return
	}
	qp.s.ctr.inc(FlushesExecuted)
	rs.respOnlyDone(psn, va, rkey)
}

// respOnlyDone ends an executed FLUSH or ATOMIC WRITE: it keeps a
// responder resource for a duplicate, moves MSN and the expected PSN on,
// and answers.
func (rs *responder) respOnlyDone(psn uint32, va uint64, rkey uint32) {
	res := rs.newResource()
	res.kind, res.first, res.last = resRespOnly, psn, psn
	res.va, res.rkey = va, rkey
	rs.msn = wire.PSNAdd(rs.msn, 1)
	rs.advance(psn, 1, false)
	rs.flushAck()
	rs.respOnlyAck(psn)
}

// respOnlyAck sends the answer to a FLUSH or ATOMIC WRITE: an RDMA READ
// Response Only without payload, its AETH an ACK with the credits.
func (rs *responder) respOnlyAck(psn uint32) {
	qp := rs.qp
	var h wire.Headers
	h.BTH.Opcode = wire.RCReadResponseOnly
	h.BTH.PSN = psn
	h.AETH = wire.AETHFields{Syndrome: rs.credits(), MSN: rs.msn}
	frame, _ := qp.startFrame(&h, 0)
	if qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "resp", "send RDMA READ Response Only psn=%d len=0 (answers FLUSH or ATOMIC WRITE)", psn)
	}
	qp.emit(frame)
}

// duplicateRespOnly answers a duplicate FLUSH or ATOMIC WRITE from its
// responder resource, without executing it again, as rxe does (citing
// IBTA's oA19-14 and oA19-15): an ATOMIC WRITE replayed after the word
// changed must not overwrite the newer value. With no resource left the
// request is dropped, as a READ's would be, and the requester's retry
// finds out.
func (rs *responder) duplicateRespOnly(p *wire.Packet, psn uint32) {
	qp := rs.qp
	res := rs.findResource(psn, resRespOnly)
	if res == nil || res.rkey != p.RETH().RKey() {
		qp.s.ctr.inc(ResourceMiss)
		if qp.s.tracing() {
			qp.s.tracef(qp.Cfg.QPN, "resp", "duplicate %v psn=%d: no responder resource holds it any more; dropped", p.Opcode(), psn)
		}
		return
	}
	qp.s.ctr.inc(AtomicReplays)
	rs.flushAck()
	rs.respOnlyAck(psn)
}
