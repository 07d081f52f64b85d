// RC atomics: FETCH_AND_ADD and COMPARE_AND_SWAP on an aligned 64-bit word
// of the responder's memory, the original value returned to the
// requester's. Both words are in host byte order.

package ibvtest

import (
	"encoding/binary"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

// atomicRC connects an RC pair for atomics, or skips when a device has
// none. It returns the offsets of the responder's word and the requester's
// result, both 8-byte aligned.
func atomicRC(t *testing.T, p Pair) (c *rc, word, result int) {
	t.Helper()
	c = newRC(t, p, verbs.QPCap{})
	if c.a.attr.AtomicCap == verbs.AtomicNone || c.b.attr.AtomicCap == verbs.AtomicNone {
		t.Skipf("atomic_cap %v and %v", c.a.attr.AtomicCap, c.b.attr.AtomicCap)
	}
	if c.pa.ord == 0 {
		t.Skip("no atomics outstanding allowed: max_qp_init_rd_atom or max_qp_rd_atom is 0")
	}
	return c, c.b.aligned8(dstOff + 64), c.a.aligned8(dstOff + 64)
}

// atomic posts one atomic WR from a to b's word, after B said its word is
// ready and before A says it is done, and returns the original value the
// requester got back.
func atomic(t *testing.T, c *rc, op verbs.WROpcode, word, result int, compareAdd, swap uint64) uint64 {
	t.Helper()
	a, b := c.a, c.b
	binary.NativeEndian.PutUint64(a.mem[result:], 0xDEADBEEFDEADBEEF)
	c.ready(t)
	a.postSend(c.qa, &verbs.SendWR{ID: 9, Opcode: op, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{a.sge(result, 8)}, RemoteAddr: b.va(word), RKey: b.mr.RKey(),
		CompareAdd: compareAdd, Swap: swap})
	wc := waitOne(t, a.scq)
	checkWC(t, op.String(), wc, 9, verbs.WCSuccess, op.CompletionOpcode())
	if wc.ByteLen != 8 {
		t.Fatalf("%v: byte_len %d, want 8", op, wc.ByteLen)
	}
	c.done(t)
	return binary.NativeEndian.Uint64(a.mem[result:])
}

func testFetchAdd(t *testing.T, p Pair) {
	c, word, result := atomicRC(t, p)
	w := c.b.mem[word : word+8]
	binary.NativeEndian.PutUint64(w, 0x0123456789ABCDEF)
	if got := atomic(t, c, verbs.WRAtomicFetchAdd, word, result, 0x1111, 0); got != 0x0123456789ABCDEF {
		t.Fatalf("FetchAdd returned %#x, want the original %#x", got, uint64(0x0123456789ABCDEF))
	}
	if got := binary.NativeEndian.Uint64(w); got != 0x0123456789ABCDEF+0x1111 {
		t.Fatalf("word after FetchAdd %#x, want %#x", got, uint64(0x0123456789ABCDEF+0x1111))
	}
	// The add wraps at 64 bits.
	binary.NativeEndian.PutUint64(w, ^uint64(0))
	if got := atomic(t, c, verbs.WRAtomicFetchAdd, word, result, 2, 0); got != ^uint64(0) {
		t.Fatalf("FetchAdd returned %#x, want %#x", got, ^uint64(0))
	}
	if got := binary.NativeEndian.Uint64(w); got != 1 {
		t.Fatalf("word after a wrapping FetchAdd %#x, want 1", got)
	}
}

func testCmpSwap(t *testing.T, p Pair) {
	c, word, result := atomicRC(t, p)
	w := c.b.mem[word : word+8]
	binary.NativeEndian.PutUint64(w, 42)
	// Equal: swapped.
	if got := atomic(t, c, verbs.WRAtomicCmpSwp, word, result, 42, 0xFEEDFACE); got != 42 {
		t.Fatalf("CmpSwap returned %d, want 42", got)
	}
	if got := binary.NativeEndian.Uint64(w); got != 0xFEEDFACE {
		t.Fatalf("word after a matching CmpSwap %#x, want 0xfeedface", got)
	}
	// Not equal: unchanged, the current value returned.
	if got := atomic(t, c, verbs.WRAtomicCmpSwp, word, result, 42, 7); got != 0xFEEDFACE {
		t.Fatalf("CmpSwap returned %#x, want 0xfeedface", got)
	}
	if got := binary.NativeEndian.Uint64(w); got != 0xFEEDFACE {
		t.Fatalf("word after a failed CmpSwap %#x, want it unchanged (0xfeedface)", got)
	}
}
