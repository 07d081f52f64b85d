package roce

import (
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/roce/wire"
)

// check is the verdict of one responder check step (rxe's resp_states,
// folded to what decides the answer): checkOK lets the packet go on to the
// next step, anything else names why it stops and so which answer it gets.
type check uint8

const (
	checkOK         check = iota
	checkPSNAhead         // PSN beyond the expected one: sequence error NAK, once per gap
	checkDuplicate        // PSN already executed: re-ACK or replay (duplicate)
	checkOpSeq            // opcode out of sequence: invalid request NAK (class C)
	checkOpcode           // opcode this device does not offer: invalid request NAK
	checkAccess           // QP access flags forbid the operation: invalid request NAK
	checkNoRdAtomic       // READ or atomic with max_dest_rd_atomic 0: invalid request NAK
	checkLength           // payload or DMA length wrong: invalid request NAK
	checkFETH             // FLUSH placement type or selectivity reserved: invalid request NAK
)

// checkPSN is CHK_PSN (§9.7.5.1.1): the request must carry the expected
// PSN; an older one is a duplicate (answered by duplicate, §9.7.5.1.4
// for READs), a newer one leaves a gap.
func (rs *responder) checkPSN(psn uint32) check {
	switch d := wire.PSNDiff(psn, rs.epsn); {
	case d > 0:
		return checkPSNAhead
	case d < 0:
		return checkDuplicate
	}
	return checkOK
}

// checkOpSeq is CHK_OP_SEQ (§9.7.5.1.3, class C): Middle and Last
// continue a message of their own kind; anything else starts one.
func (rs *responder) checkOpSeq(info *wire.OpInfo) check {
	cont := info.Pos == wire.PosMiddle || info.Pos == wire.PosLast
	ok := !cont
	switch rs.inMsg {
	case msgSend:
		ok = cont && info.Kind == wire.KindSend
	case msgWrite:
		ok = cont && info.Kind == wire.KindWrite
	}
	if !ok {
		return checkOpSeq
	}
	return checkOK
}

// checkOpValid is CHK_OP_VALID: the opcode must be one this device offers
// and the QP's access flags must allow it. A WRITE is checked at its first
// packet, as the flags cannot change the meaning of a message already
// accepted. ATOMIC WRITE needs remote write, as a WRITE (rxe does the same);
// FLUSH needs the QP to allow each placement type it asks for (rxe's
// check_qp_attr_access), and the region will be checked for them too.
func (rs *responder) checkOpValid(p *wire.Packet, info *wire.OpInfo) check {
	var need memory.Access
	switch info.Kind {
	case wire.KindSend:
		return checkOK
	case wire.KindWrite:
		if !info.First() {
			return checkOK
		}
		need = memory.RemoteWrite
	case wire.KindReadRequest:
		need = memory.RemoteRead
	case wire.KindCmpSwap, wire.KindFetchAdd:
		need = memory.RemoteAtomic
	case wire.KindAtomicWrite:
		need = memory.RemoteWrite
	case wire.KindFlush:
		var c check
		if need, c = flushNeeds(p.FETH()); c != checkOK {
			return c
		}
	default:
		return checkOpcode
	}
	if !rs.qp.Attr.AccessFlags.Has(need) {
		return checkAccess
	}
	return checkOK
}

// flushNeeds returns the access rights a FLUSH's FETH asks for: one per
// placement type. A FETH naming no placement type, a reserved one, or a
// reserved selectivity is malformed.
func flushNeeds(f wire.FETH) (memory.Access, check) {
	plt, sel := f.PlacementType(), f.Selectivity()
	if plt == 0 || plt&^(wire.FlushGlobalVisibility|wire.FlushPersistence) != 0 ||
		sel != wire.FlushSelectRange && sel != wire.FlushSelectWholeMR {
		return 0, checkFETH
	}
	var need memory.Access
	if plt&wire.FlushGlobalVisibility != 0 {
		need |= memory.FlushGlobal
	}
	if plt&wire.FlushPersistence != 0 {
		need |= memory.FlushPersistent
	}
	return need, checkOK
}

// checkResource is CHK_RESOURCE for READs, atomics, FLUSH and ATOMIC
// WRITE: they need a responder resource, and max_dest_rd_atomic 0 means
// the QP has none. A
// SEND's (or WRITE with immediate's) receive WQE is taken later, once the
// packet's length passed, so a malformed packet consumes no WQE.
func (rs *responder) checkResource(info *wire.OpInfo) check {
	switch info.Kind {
	case wire.KindReadRequest, wire.KindCmpSwap, wire.KindFetchAdd, wire.KindFlush, wire.KindAtomicWrite:
		if len(rs.res) == 0 {
			return checkNoRdAtomic
		}
	}
	return checkOK
}

// checkLength is CHK_LENGTH for one packet's payload against the path MTU
// (§9.7.5.1.3): First and Middle carry exactly one MTU, Last at least one
// byte, Only at most one MTU.
func (rs *responder) checkLength(info *wire.OpInfo, n int) check {
	mtu := rs.qp.mtu
	ok := n <= mtu
	switch info.Pos {
	case wire.PosFirst, wire.PosMiddle:
		ok = n == mtu
	case wire.PosLast:
		ok = n > 0 && n <= mtu
	}
	if !ok {
		return checkLength
	}
	return checkOK
}

// checkDMALength is CHK_LENGTH for a RETH: lengths up to 2^31 are valid
// (C9-94 as rxe cites it).
func checkDMALength(n uint32) check {
	if n > 1<<31 {
		return checkLength
	}
	return checkOK
}

// checkRKey is CHK_RKEY: the rkey must name a region or window of the QP's
// PD allowing access over the whole range [va, va+n). It is checked for the
// whole message at its first packet, as rxe does, so an access error is
// found before any byte of the message lands.
func (rs *responder) checkRKey(rkey uint32, va uint64, n uint32, access memory.Access) memory.Fault {
	qp := rs.qp
	ref, f := qp.Cfg.Memory.CheckRemote(qp.Cfg.PD, qp.Cfg.QPN, rkey, va, n, access)
	if f == memory.Ok {
		ref.Release()
	}
	return f
}

// checkWriteLength is CHK_LENGTH for an RDMA WRITE packet: its payload
// fits the path MTU rule, stays inside the RETH's DMA length, and the Last
// packet ends the message exactly at that length.
func (rs *responder) checkWriteLength(info *wire.OpInfo, n int) check {
	if c := rs.checkLength(info, n); c != checkOK {
		return c
	}
	end := uint64(rs.off) + uint64(n)
	if end > uint64(rs.wlen) || info.Last() && end != uint64(rs.wlen) {
		return checkLength
	}
	return checkOK
}
