// Atomic operations on registered memory: the responder side of IBTA
// COMPARE_SWAP, FETCH_ADD and ATOMIC WRITE. The 8 bytes are accessed with
// sync/atomic, so the operation is atomic against other NIC goroutines and
// against another process mapping the same Shared memory. Values are in host
// byte order in memory (as rxe does); the engines convert from and to the
// big-endian wire fields.

package memory

import (
	"sync/atomic"
	"unsafe"
)

// CompareSwap atomically replaces the 8 bytes at va with swap if they equal
// compare, and returns their original value either way. It needs a Ref
// checked with RemoteAtomic and an 8-byte aligned va.
func (r *Ref) CompareSwap(va, compare, swap uint64) (orig uint64, f Fault) {
	p, f := r.word(va, permAtomic)
	if f != Ok {
		return 0, f
	}
	for {
		old := atomic.LoadUint64(p)
		if old != compare || atomic.CompareAndSwapUint64(p, old, swap) {
			return old, Ok
		}
	}
}

// FetchAdd atomically adds add to the 8 bytes at va (wrapping) and returns
// their original value. It needs a Ref checked with RemoteAtomic and an
// 8-byte aligned va.
func (r *Ref) FetchAdd(va, add uint64) (orig uint64, f Fault) {
	p, f := r.word(va, permAtomic)
	if f != Ok {
		return 0, f
	}
	return atomic.AddUint64(p, add) - add, Ok
}

// AtomicWrite atomically stores v in the 8 bytes at va (IBTA ATOMIC WRITE,
// a 64-bit store with release semantics). Like rxe it needs a Ref checked
// with RemoteWrite; va must be 8-byte aligned.
func (r *Ref) AtomicWrite(va, v uint64) Fault {
	p, f := r.word(va, permWrite)
	if f != Ok {
		return f
	}
	atomic.StoreUint64(p, v)
	if rg := r.tg.region; rg != nil {
		rg.written() // a placement like a WRITE's: wake a watcher
	}
	return Ok
}

// word returns the aligned 8-byte word at va, checking bounds, access and
// alignment of both the wire address and the host address.
func (r *Ref) word(va uint64, p perm) (*uint64, Fault) {
	off, f := r.at(va, 8, p)
	if f != Ok {
		return nil, f
	}
	if !aligned8(r.tg, va, off) {
		return nil, Misaligned
	}
	return (*uint64)(unsafe.Pointer(&r.tg.mem[off])), Ok
}
