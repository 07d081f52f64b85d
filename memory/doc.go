// Package memory is the NIC's DMA trust boundary: memory regions (MRs) and
// memory windows (MWs), their lkeys and rkeys, access flags, and every copy
// between registered memory and packet buffers.
//
// Nothing that arrives from the wire is trusted. A key, an address or a
// length from a packet only ever reaches registered memory through
// Table.CheckRemote (rkeys) or Table.CheckLocal and the scatter/gather helpers
// (lkeys), which check, in this order: the key (index and key byte), that the
// object is still valid, the protection domain, the QP for Type 2B windows,
// the access flags, the bounds (with no integer overflow possible) and, for
// atomics, the 8-byte alignment. A failed check is a Fault code, not an error,
// so the packet path never allocates; control-path calls (Register, Bind, ...)
// return errors wrapping the exported sentinels (ErrInvalidAccess, ErrBusy,
// ...).
//
// # Keys
//
// An lkey or rkey is index<<8 | keyByte, as in Linux rxe. The index names a
// slot in the Table through a keyed permutation of the 24-bit index space
// (perm.go): slots are allocated densely, but their indices are scattered
// over all 2^24 values with no relation between them, and a slot's next
// occupant gets another index, so a peer that saw one rkey learns nothing
// about the others and guessing a live key takes on the order of
// 2^32 / (live keys) tries. Index 0 is never used, so key 0 never
// resolves. The key byte is drawn for every new registration or bind from a
// ChaCha8 stream, and is never one of the last 32 key bytes used in that
// slot, so a stale key cannot match the slot's new occupant and the next key
// cannot be derived from earlier ones. An MR's lkey equals its rkey. The
// stream and the permutation are seeded from crypto/rand, or from
// Config.Seed in a simulation that must replay exactly.
//
// # Windows
//
// A window (window.go) takes a range of an MR with its own remote rights
// and rkey. Bind applies the IBTA rules (C10-72..75, o10-36.2.2,
// o10-37.2.30/40); BindByKey (window_key.go) does the same for a bind work
// request, which names the window by its current rkey and the MR by its
// lkey, as rxe's does. The key byte of a window's new rkey is the
// consumer's when it names one (ibv_inc_rkey, the bind WR's rkey), else
// drawn like any other; FreshRKey draws one for a Type 1 bind verb, which
// must report the rkey before the send queue executes the bind. A Type 2B
// window belongs to the QP that bound it until it is invalidated
// (invalidate.go) or deallocated.
//
// # References and the in-flight DMA rule
//
// A successful check returns a Ref, a small value that holds a reference on
// the registered memory. While any Ref is held, the memory under it stays
// mapped even if the region is deregistered or its Shared backing is closed;
// the key itself is dead the moment Deregister or Invalidate returns. Engines
// should hold a Ref only for the copy of one packet and release it at once
// (Ref.Release), re-checking the key for the next packet: this makes
// deregistration and invalidation take effect between packets, exactly as a
// hardware NIC re-translates each DMA. The Gather and Scatter helpers take and
// drop their references internally.
//
// # Zero-length operations
//
// A zero-length remote or local access is valid with any key, PD and address
// (IBTA C9-88: an RDMA READ or WRITE with a DMA length of zero does not check
// the R_Key or VA; rxe does the same). It returns an empty Ref through which
// no byte can move.
//
// # FLUSH: visibility and persistence
//
// IBTA 1.5's FLUSH asks a responder to make what it placed globally visible
// (FlushGlobal) or persistent (FlushPersistent); Table.CheckFlush checks
// the rkey and the region's rights for it. On rnic both are reached the
// moment a placement's copy returns: the NIC has no cache or buffer of its
// own between the wire and the region, whose backing memory is the
// registering process's own (Go memory, or an anonymous mapping) or a
// Shared memfd. Persistence therefore means "in the region's backing
// memory", which is RAM: it survives the NIC, rnicd and the requester, not
// the machine. No region is backed by a file of its own (MapShared takes
// only sealed memfds, which live in the kernel's shmem), so there is no
// msync step to take; a file-backed region, were one added, would make
// msync of the flushed range the persistence step. Linux rxe, by contrast,
// grants FlushPersistent only to regions on persistent-memory pages and
// writes their cache lines back.
//
// # Shared memory
//
// Shared is memfd-backed memory that another process can map too (Fd, and
// MapShared on the receiving side). Register recognises slices of a live
// Shared by address and pins the mapping: Shared.Close only unmaps once no
// region and no in-flight DMA uses it. MapShared refuses an fd that is not
// sealed against shrinking, because a peer truncating the file under a
// mapping would make the NIC fault (SIGBUS) on access.
package memory
