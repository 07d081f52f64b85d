// The checks of the packet path: resolve an rkey or lkey and validate the
// PD, QP, access rights, bounds and atomic alignment of an access before a
// byte moves, returning a held Ref or a Fault. Lock-free and allocation-free.

package memory

import "unsafe"

// CheckRemote checks a peer's access through rkey to the length bytes at
// wire address va, made on a QP numbered qpn in protection domain pd, needing
// the rights in need (a combination of RemoteRead, RemoteWrite and
// RemoteAtomic). When need includes RemoteAtomic the address must be 8-byte
// aligned, both on the wire and in host memory.
//
// On Ok the Ref holds a reference on the memory that the caller must Release
// once the copy is done. A zero length is Ok for any rkey, pd and va (IBTA
// C9-88) and yields an empty Ref, which moves no bytes and needs no Release.
func (t *Table) CheckRemote(pd PD, qpn uint32, rkey uint32, va uint64, length uint32, need Access) (Ref, Fault) {
	if length == 0 {
		return Ref{}, Ok
	}
	tg, f := t.resolveRemote(pd, qpn, rkey, need)
	if f != Ok {
		return Ref{}, f
	}
	off, ok := tg.span(va, uint64(length))
	if !ok {
		return Ref{}, OutOfBounds
	}
	if need&RemoteAtomic != 0 && !aligned8(tg, va, off) {
		return Ref{}, Misaligned
	}
	if f := t.acquire(tg); f != Ok {
		return Ref{}, f
	}
	var p perm
	if need&RemoteRead != 0 {
		p |= permRead
	}
	if need&RemoteWrite != 0 {
		p |= permWrite
	}
	if need&RemoteAtomic != 0 {
		p |= permAtomic
	}
	return Ref{tg: tg, perm: p}, Ok
}

// resolveRemote finds the live target of rkey and checks what a remote
// access needs of it whatever the range: PD, the QP owning a type 2
// window, the rights in need.
func (t *Table) resolveRemote(pd PD, qpn uint32, rkey uint32, need Access) (*target, Fault) {
	tg := t.lookup(rkey)
	if tg == nil {
		return nil, BadKey
	}
	if tg.dead.Load() {
		return nil, t.deadFault(tg)
	}
	if tg.pd != pd {
		return nil, BadPD
	}
	if tg.kind == kindMW2 && tg.qpn != qpn {
		return nil, BadQP
	}
	if !tg.access.Has(need) {
		return nil, NoAccess
	}
	return tg, Ok
}

// CheckFlush checks a peer's FLUSH (IBTA 1.5) through rkey, made on QP qpn
// in pd, asking for the placement rights in need (FlushGlobal,
// FlushPersistent). A FLUSH of a range must lie inside the key's memory,
// as a READ's would; one of the whole region (whole) names the region by
// its key alone, and va and length mean nothing. Unlike a READ or WRITE, a
// zero-length range still needs a valid key: the FLUSH names memory whose
// earlier writes it makes visible, not bytes it moves.
//
// Nothing is held afterwards: every byte placed through this Table was
// copied into the region's backing memory before the call that placed it
// returned, so a FLUSH that passed this check has nothing left to do there
// (see the package documentation on persistence).
func (t *Table) CheckFlush(pd PD, qpn uint32, rkey uint32, va uint64, length uint32, need Access, whole bool) Fault {
	tg, f := t.resolveRemote(pd, qpn, rkey, need&flushAccess)
	if f != Ok {
		return f
	}
	if !whole {
		if _, ok := tg.span(va, uint64(length)); !ok {
			return OutOfBounds
		}
	}
	return Ok
}

// CheckLocal checks a local access through lkey (an SGE of a work request)
// to the length bytes at addr in pd. need is LocalWrite when the NIC will
// write the memory (receive, RDMA READ response, atomic result) and 0 when
// it only reads it (send, RDMA WRITE source). Window keys are not lkeys.
//
// On Ok the Ref holds a reference the caller must Release. A zero length is
// Ok for any lkey and yields an empty Ref.
func (t *Table) CheckLocal(pd PD, lkey uint32, addr uint64, length uint32, need Access) (Ref, Fault) {
	if length == 0 {
		return Ref{}, Ok
	}
	tg, f := t.checkLocal(pd, lkey, addr, uint64(length), need)
	if f != Ok {
		return Ref{}, f
	}
	p := permRead
	if need&LocalWrite != 0 {
		p |= permWrite
	}
	return Ref{tg: tg, perm: p}, Ok
}

// checkLocal is CheckLocal returning the acquired target itself.
func (t *Table) checkLocal(pd PD, lkey uint32, addr, n uint64, need Access) (*target, Fault) {
	tg := t.lookup(lkey)
	if tg == nil || tg.kind != kindMR {
		return nil, BadKey
	}
	if tg.dead.Load() {
		return nil, t.deadFault(tg)
	}
	if tg.pd != pd {
		return nil, BadPD
	}
	if !tg.access.Has(need) {
		return nil, NoAccess
	}
	if _, ok := tg.span(addr, n); !ok {
		return nil, OutOfBounds
	}
	if f := t.acquire(tg); f != Ok {
		return nil, f
	}
	return tg, Ok
}

// acquire pins tg's memory, failing if tg died since it was looked up.
// Checking dead after taking the reference closes the race with Deregister
// and Invalidate, which mark the target dead before they drop its
// registration reference.
func (t *Table) acquire(tg *target) Fault {
	if !tg.pin.tryAcquire() {
		return t.deadFault(tg)
	}
	if tg.dead.Load() {
		tg.pin.release()
		return t.deadFault(tg)
	}
	return Ok
}

// deadFault tells an invalidated key, still resolving to its dead target,
// from a deregistered or replaced one.
func (t *Table) deadFault(tg *target) Fault {
	if t.lookup(tg.key) == tg {
		return Invalidated
	}
	return BadKey
}

// aligned8 reports whether wire address va, at offset off in tg.mem, is
// 8-byte aligned both on the wire and in host memory (sync/atomic needs the
// latter; an iova and its buffer need not agree modulo 8).
func aligned8(tg *target, va, off uint64) bool {
	return va&7 == 0 && (uintptr(unsafe.Pointer(unsafe.SliceData(tg.mem)))+uintptr(off))&7 == 0
}
