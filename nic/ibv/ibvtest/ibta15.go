// IBTA 1.5's RC operations: ATOMIC WRITE (8 bytes placed with one store)
// and FLUSH (the data placed before it made globally visible or
// persistent). A device offers them by its extended capability flags;
// without the flag the subtest skips, saying which (Linux rxe before 6.2,
// siw and rnic's iWARP device have none).

package ibvtest

import (
	"encoding/binary"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// needCapEx skips unless both devices advertise every flag in want.
func needCapEx(t *testing.T, c *rc, want verbs.DeviceCapEx, name string) {
	t.Helper()
	for _, s := range []*side{c.a, c.b} {
		if s.attr.DeviceCapFlagsEx&want == 0 {
			t.Skipf("%s: device_cap_flags_ex %#x lacks %s", s.dev.Name(), uint64(s.attr.DeviceCapFlagsEx), name)
		}
	}
}

// testAtomicWrite: the 8 bytes land as they lie in the requester's host
// memory, the bytes around them untouched; the completion is ATOMIC_WRITE.
func testAtomicWrite(t *testing.T, p Pair) {
	c := newRC(t, p, verbs.QPCap{})
	needCapEx(t, c, verbs.DeviceAtomicWrite, "IB_UVERBS_DEVICE_ATOMIC_WRITE")
	if c.pa.ord == 0 {
		t.Skip("no RDMA READ or atomic outstanding allowed: max_qp_init_rd_atom or max_qp_rd_atom is 0")
	}
	a, b := c.a, c.b
	word := b.aligned8(dstOff + 64)
	memset(b.mem[word-8:word+16], untouch)
	c.ready(t)
	for i, v := range []uint64{0x0123456789ABCDEF, 0} {
		a.postSend(c.qa, &verbs.SendWR{ID: uint64(20 + i), Opcode: verbs.WRAtomicWrite, Flags: verbs.SendSignaled,
			RemoteAddr: b.va(word), RKey: b.mr.RKey(), Swap: v})
		checkWC(t, "atomic write", waitOne(t, a.scq), uint64(20+i), verbs.WCSuccess, verbs.WCAtomicWrite)
		c.done(t)
		if got := binary.NativeEndian.Uint64(b.mem[word:]); got != v {
			t.Fatalf("word after ATOMIC WRITE %#x, want %#x", got, v)
		}
		c.ready(t)
	}
	checkFilled(t, "memory before the word", b.mem[word-8:word], untouch)
	checkFilled(t, "memory after the word", b.mem[word+8:word+16], untouch)
}

// testFlush: a WRITE, then a FLUSH of its range and one of the whole
// region, each with global visibility (and persistence where the device
// grants it to ordinary memory): the FLUSHes complete as FLUSH, after the
// WRITE, whose data is there. The responder's region and QP get the FLUSH
// access flags; a device that refuses them for ordinary memory (rxe grants
// persistence to persistent-memory pages only) is tested with what it
// grants.
func testFlush(t *testing.T, p Pair) {
	c := newRC(t, p, verbs.QPCap{})
	needCapEx(t, c, verbs.DeviceFlushGlobal, "IB_UVERBS_DEVICE_FLUSH_GLOBAL")
	if c.pa.ord == 0 {
		t.Skip("no RDMA READ or atomic outstanding allowed: max_qp_init_rd_atom or max_qp_rd_atom is 0")
	}
	a, b := c.a, c.b
	mr, types := flushMR(t, b)
	rights := memory.FlushGlobal
	if types&verbs.FlushPersistent != 0 {
		rights |= memory.FlushPersistent
	}
	allowFlush(t, b, c.qb, rights)
	const n, off = 3000, 64 << 10
	fill(a.mem[srcOff:srcOff+n], 7)
	memset(b.mem[dstOff+off:dstOff+off+n], untouch)
	c.ready(t)
	va := mr.Addr() + off
	a.postSend(c.qa, &verbs.SendWR{ID: 30, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(srcOff, n)}, RemoteAddr: va, RKey: mr.RKey()})
	a.postSend(c.qa, &verbs.SendWR{ID: 31, Opcode: verbs.WRFlush, Flags: verbs.SendSignaled, RemoteAddr: va, RKey: mr.RKey(),
		FlushType: types, FlushLevel: verbs.FlushRange, FlushLen: n})
	a.postSend(c.qa, &verbs.SendWR{ID: 32, Opcode: verbs.WRFlush, Flags: verbs.SendSignaled, RKey: mr.RKey(),
		FlushType: verbs.FlushGlobal, FlushLevel: verbs.FlushMR})
	checkWC(t, "flush of the range", waitOne(t, a.scq), 31, verbs.WCSuccess, verbs.WCFlush)
	checkWC(t, "flush of the region", waitOne(t, a.scq), 32, verbs.WCSuccess, verbs.WCFlush)
	c.done(t)
	checkBytes(t, "data written before the FLUSH", b.mem[dstOff+off:dstOff+off+n], a.mem[srcOff:srcOff+n])
}

// flushMR registers s's destination half again with the FLUSH access
// flags the device offers, and returns it with the placement types it
// allows; persistence is dropped if the device refuses it for this memory.
func flushMR(t *testing.T, s *side) (ibv.MR, verbs.FlushType) {
	t.Helper()
	base := memory.LocalWrite | memory.RemoteWrite
	access, types := s.attr.DeviceCapFlagsEx.FlushAccess(), verbs.FlushGlobal
	if access&memory.FlushPersistent != 0 {
		types |= verbs.FlushPersistent
	}
	mr, err := s.dev.RegMR(s.pd, s.mem[dstOff:], base|access)
	if err != nil && access&memory.FlushPersistent != 0 {
		t.Logf("%s: RegMR with FLUSH_PERSISTENT: %v; testing global visibility only", s.dev.Name(), err)
		types = verbs.FlushGlobal
		mr, err = s.dev.RegMR(s.pd, s.mem[dstOff:], base|memory.FlushGlobal)
	}
	if err != nil {
		t.Fatalf("%s: RegMR with FLUSH access: %v", s.dev.Name(), err)
	}
	cleanup(t, "DeregMR", mr.Dereg)
	return mr, types
}

// allowFlush adds the FLUSH rights in flush to qp's access flags (RTS to
// RTS), as a responder must allow them on the QP too.
func allowFlush(t *testing.T, s *side, qp ibv.QP, flush memory.Access) {
	t.Helper()
	acc := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | flush
	if s.attr.AtomicCap != verbs.AtomicNone {
		acc |= memory.RemoteAtomic
	}
	if err := qp.Modify(&verbs.QPAttr{State: verbs.QPSRTS, AccessFlags: acc}, verbs.AttrState|verbs.AttrAccessFlags); err != nil {
		t.Fatalf("QP %#x: access flags %v in RTS: %v", qp.QPN(), acc, err)
	}
}
