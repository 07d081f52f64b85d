// Ref: a checked, referenced view of registered memory, and the bounded
// copies through it (RDMA WRITE placement, RDMA READ response data). The
// reference keeps the memory mapped during the copy even if the key is
// deregistered meanwhile; it must be released right after.

package memory

type perm uint8

const (
	permRead perm = 1 << iota
	permWrite
	permAtomic
)

// Ref is the result of a successful CheckRemote or CheckLocal: it allows the
// checked kind of access anywhere inside the key's region or window (every
// copy re-checks its own bounds) and holds a reference on the memory.
//
// A Ref must be released exactly once, with Release, and not used after;
// copying a Ref does not add a reference. The zero Ref is empty: only
// zero-length copies succeed through it and releasing it is a no-op.
type Ref struct {
	tg   *target
	perm perm
}

// Release drops the reference and empties r. Releasing an empty Ref does
// nothing, so a second Release through the same variable is harmless.
func (r *Ref) Release() {
	if r.tg != nil {
		r.tg.pin.release()
		r.tg = nil
	}
}

// Empty reports whether r holds no memory (zero-length check or released).
func (r *Ref) Empty() bool { return r.tg == nil }

// Valid reports whether the key r was checked with is still valid. Copies
// through a held Ref stay memory-safe after deregistration; an engine that
// keeps a Ref across packets can use Valid to stop early.
func (r *Ref) Valid() bool { return r.tg == nil || !r.tg.dead.Load() }

// Read copies len(dst) bytes at wire address va into dst (the data of an
// RDMA READ response, or a local gather). It needs RemoteRead for a remote
// Ref; local Refs can always be read.
func (r *Ref) Read(va uint64, dst []byte) Fault {
	if len(dst) == 0 {
		return Ok
	}
	off, f := r.at(va, uint64(len(dst)), permRead)
	if f != Ok {
		return f
	}
	copy(dst, r.tg.mem[off:])
	return Ok
}

// Write copies src to wire address va (RDMA WRITE placement, or a local
// scatter). It needs RemoteWrite for a remote Ref, LocalWrite for a local
// one.
func (r *Ref) Write(va uint64, src []byte) Fault {
	if len(src) == 0 {
		return Ok
	}
	off, f := r.at(va, uint64(len(src)), permWrite)
	if f != Ok {
		return f
	}
	copy(r.tg.mem[off:], src)
	if rg := r.tg.region; rg != nil {
		rg.written()
	}
	return Ok
}

// at checks an access of n > 0 bytes at va needing p and returns its offset
// in the target's memory.
func (r *Ref) at(va, n uint64, p perm) (uint64, Fault) {
	if r.tg == nil {
		return 0, OutOfBounds
	}
	if r.perm&p == 0 {
		return 0, NoAccess
	}
	off, ok := r.tg.span(va, n)
	if !ok {
		return 0, OutOfBounds
	}
	return off, Ok
}
