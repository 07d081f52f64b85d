package roce

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
)

// Scenarios of IBTA Vol 1 1.5's ATOMIC WRITE and FLUSH on RC, with the
// rules Linux rxe (6.2 and later) applies to them.

// flushAccess is what the FLUSH tests give the QPs and regions: the
// defaults plus both placement types.
const flushAccess = memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic | memory.FlushGlobal | memory.FlushPersistent

func flushOpts() qpOpts {
	o := defaultOpts()
	o.access = flushAccess
	return o
}

// countWhere counts the frames in direction dir matching pred, passing all.
func countWhere(dir transport.Direction, n *int, pred func(f *wire.Frame) bool) transport.Script {
	return func(d transport.Direction, _ int, frame []byte) transport.Verdict {
		var f wire.Frame
		if d == dir && f.Decode(frame, 0) == nil && pred(&f) {
			*n++
		}
		return transport.Pass()
	}
}

// An ATOMIC WRITE places its 8 bytes as they lie in the requester's host
// memory, with one store, and is answered by an RDMA READ Response Only
// without payload (rxe's send_read_response_ack); it completes as
// ATOMIC_WRITE with 8 bytes.
func TestAtomicWritePlaces(t *testing.T) {
	var answers int
	o := defaultOpts()
	o.faults.Script = countWhere(transport.BtoA, &answers, func(f *wire.Frame) bool {
		return f.Packet.Opcode() == wire.RCReadResponseOnly && len(f.Packet.Payload()) == 0
	})
	h := newHarness(t, o)
	a, b := h.a, h.b
	copy(b.buf[0x208:], "neighbor")
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRAtomicWrite, RemoteAddr: b.va(0x200), RKey: b.mr.RKey(), Swap: 0x0102030405060708})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCAtomicWrite, ByteLen: 8})
	var want [8]byte
	binary.NativeEndian.PutUint64(want[:], 0x0102030405060708)
	if !bytes.Equal(b.buf[0x200:0x208], want[:]) || string(b.buf[0x208:0x210]) != "neighbor" {
		t.Fatalf("remote bytes % x | %q, want % x | neighbor", b.buf[0x200:0x208], b.buf[0x208:0x210], want)
	}
	if answers != 1 || b.stack.ctr.Get(AtomicWrites) != 1 {
		t.Fatalf("%d empty READ Response Only, atomic_writes=%d; want 1 and 1", answers, b.stack.ctr.Get(AtomicWrites))
	}
}

// A lost answer to an ATOMIC WRITE: the requester times out and sends it
// again; the responder answers the duplicate from its responder resource
// without storing again (as for atomics, §9.7.5.1.4), so a value written
// to the word meanwhile survives the retry.
func TestDuplicateAtomicWriteNotReexecuted(t *testing.T) {
	var b *node
	o := withScript(func(d transport.Direction, _ int, frame []byte) transport.Verdict {
		if op, _, ok := opcodeOf(frame); ok && d == transport.BtoA && op == wire.RCReadResponseOnly && b.stack.ctr.Get(AtomicReplays) == 0 {
			// The responder's host overwrites the word before the
			// retry arrives.
			binary.NativeEndian.PutUint64(b.buf[0x300:], 99)
			return transport.Drop()
		}
		return transport.Pass()
	})
	h := newHarness(t, o)
	a := h.a
	b = h.b
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRAtomicWrite, RemoteAddr: b.va(0x300), RKey: b.mr.RKey(), Swap: 7})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCAtomicWrite})
	if v := binary.NativeEndian.Uint64(b.buf[0x300:]); v != 99 {
		t.Fatalf("remote word %d after the retry, want 99: the duplicate was stored again", v)
	}
	if b.stack.ctr.Get(AtomicWrites) != 1 || b.stack.ctr.Get(AtomicReplays) != 1 || b.stack.ctr.Get(DuplicateRequest) != 1 {
		t.Fatalf("atomic_writes=%d atomic_replays=%d duplicate_request=%d, want 1 1 1",
			b.stack.ctr.Get(AtomicWrites), b.stack.ctr.Get(AtomicReplays), b.stack.ctr.Get(DuplicateRequest))
	}
}

// FLUSH ordering: a FLUSH completes only after the WRITEs before it are
// placed. The WRITE's only packet is lost: the FLUSH arrives first, finds a
// PSN gap (sequence error NAK, §9.7.5.1.1), and executes only once the
// resent WRITE has landed; its answer is the empty READ Response Only.
func TestFlushAfterLostWrite(t *testing.T) {
	o := flushOpts()
	o.faults.Script = dropWhere(transport.AtoB, 1, func(op wire.Opcode, _ uint32) bool { return op == wire.RCWriteOnly })
	h := newHarness(t, o)
	a, b := h.a, h.b
	fill(a.buf[:512], 3)
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 512)}, RemoteAddr: b.va(0x1000), RKey: b.mr.RKey()})
	a.post(t, verbs.SendWR{ID: 2, Opcode: verbs.WRFlush, RemoteAddr: b.va(0x1000), RKey: b.mr.RKey(),
		FlushType: verbs.FlushPersistent, FlushLevel: verbs.FlushRange, FlushLen: 512})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCRDMAWrite}, verbs.WC{WRID: 2, Opcode: verbs.WCFlush, ByteLen: 512})
	if !bytes.Equal(b.buf[0x1000:0x1200], a.buf[:512]) {
		t.Fatal("the WRITE before the FLUSH did not land")
	}
	if b.stack.ctr.Get(OutOfSequence) == 0 || b.stack.ctr.Get(FlushesExecuted) != 1 {
		t.Fatalf("out_of_sequence=%d flushes=%d: the FLUSH did not wait for the WRITE", b.stack.ctr.Get(OutOfSequence), b.stack.ctr.Get(FlushesExecuted))
	}
}

// A FLUSH of the whole region names it by its rkey only: address and
// length are not checked (rxe skips the range for IB_FLUSH_MR); the
// answer of a lost response is replayed, not executed again.
func TestFlushWholeRegionReplayed(t *testing.T) {
	o := flushOpts()
	o.faults.Script = dropWhere(transport.BtoA, 1, func(op wire.Opcode, _ uint32) bool { return op == wire.RCReadResponseOnly })
	h := newHarness(t, o)
	a, b := h.a, h.b
	a.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRFlush, RemoteAddr: 0xdead0000, RKey: b.mr.RKey(),
		FlushType: verbs.FlushGlobal | verbs.FlushPersistent, FlushLevel: verbs.FlushMR, FlushLen: 1 << 30})
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCFlush})
	if b.stack.ctr.Get(FlushesExecuted) != 1 || b.stack.ctr.Get(AtomicReplays) != 1 {
		t.Fatalf("flushes=%d replays=%d, want 1 1", b.stack.ctr.Get(FlushesExecuted), b.stack.ctr.Get(AtomicReplays))
	}
}

// The errors: each misuse gets the NAK rxe sends and the requester's
// completion status that NAK maps to; the QPs end in ERR.
func TestIBTA15Errors(t *testing.T) {
	cases := []struct {
		name   string
		qp     memory.Access // the QPs' access flags
		wr     func(h *harness) verbs.SendWR
		status verbs.WCStatus
		ctr    Counter
	}{
		{"atomic write without remote write on the QP", memory.RemoteRead, func(h *harness) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRAtomicWrite, RemoteAddr: h.b.va(0), RKey: h.b.mr.RKey()}
		}, verbs.WCRemInvReqErr, NakInvalidRequest},
		{"atomic write misaligned", flushAccess, func(h *harness) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRAtomicWrite, RemoteAddr: h.b.va(4), RKey: h.b.mr.RKey()}
		}, verbs.WCRemInvReqErr, MisalignedAtomic},
		{"atomic write to a read-only region", flushAccess, func(h *harness) verbs.SendWR {
			ro := register(h, memory.RemoteRead)
			return verbs.SendWR{Opcode: verbs.WRAtomicWrite, RemoteAddr: 0x900000, RKey: ro.RKey()}
		}, verbs.WCRemAccessErr, AccessViolation},
		{"atomic write past the end", flushAccess, func(h *harness) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRAtomicWrite, RemoteAddr: h.b.va(bufSize - 4), RKey: h.b.mr.RKey()}
		}, verbs.WCRemAccessErr, AccessViolation},
		{"flush persistent, QP allows global only", memory.RemoteWrite | memory.FlushGlobal, func(h *harness) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRFlush, RemoteAddr: h.b.va(0), RKey: h.b.mr.RKey(), FlushType: verbs.FlushPersistent, FlushLen: 8}
		}, verbs.WCRemInvReqErr, NakInvalidRequest},
		{"flush persistent, region allows global only", flushAccess, func(h *harness) verbs.SendWR {
			g := register(h, memory.RemoteWrite|memory.FlushGlobal)
			return verbs.SendWR{Opcode: verbs.WRFlush, RemoteAddr: 0x900000, RKey: g.RKey(), FlushType: verbs.FlushPersistent, FlushLen: 8}
		}, verbs.WCRemAccessErr, AccessViolation},
		{"flush range past the end", flushAccess, func(h *harness) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRFlush, RemoteAddr: h.b.va(bufSize - 4), RKey: h.b.mr.RKey(), FlushType: verbs.FlushGlobal, FlushLen: 8}
		}, verbs.WCRemAccessErr, AccessViolation},
		{"flush longer than 2^31 (C9-94)", flushAccess, func(h *harness) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRFlush, RemoteAddr: h.b.va(0), RKey: h.b.mr.RKey(), FlushType: verbs.FlushGlobal,
				FlushLevel: verbs.FlushMR, FlushLen: 1<<31 + 1}
		}, verbs.WCRemInvReqErr, NakInvalidRequest},
		{"flush bad rkey, zero length", flushAccess, func(h *harness) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRFlush, RemoteAddr: h.b.va(0), RKey: h.b.mr.RKey() ^ 0x80, FlushType: verbs.FlushGlobal}
		}, verbs.WCRemAccessErr, BadRKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := defaultOpts()
			o.access = c.qp
			h := newHarness(t, o)
			a, b := h.a, h.b
			wr := c.wr(h)
			wr.ID = 1
			a.post(t, wr)
			h.run()
			wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Status: c.status})
			if a.qp.State() != verbs.QPSErr || b.qp.State() != verbs.QPSErr {
				t.Fatalf("states %v/%v, want ERR/ERR", a.qp.State(), b.qp.State())
			}
			if b.stack.ctr.Get(c.ctr) != 1 {
				t.Fatalf("%v=%d, want 1", c.ctr, b.stack.ctr.Get(c.ctr))
			}
			if b.stack.ctr.Get(AtomicWrites)+b.stack.ctr.Get(FlushesExecuted) != 0 {
				t.Fatal("the faulty request was executed")
			}
		})
	}
}

// register registers 4 KiB at 0x900000 on b with access (and LocalWrite).
func register(h *harness, access memory.Access) *memory.Region {
	r, err := h.b.mem.Register(1, make([]byte, 4096), 0x900000, memory.LocalWrite|access)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// FLUSH and ATOMIC WRITE take a responder resource at the peer, so the
// requester counts them against max_rd_atomic like READs and atomics: with
// an ORD of 1 at most one of them is outstanding at a time, and all
// complete.
func TestIBTA15CountAgainstORD(t *testing.T) {
	o := flushOpts()
	o.maxRdAtomic = 1
	h := newHarness(t, o)
	a, b := h.a, h.b
	for i := uint64(1); i <= 4; i++ {
		wr := verbs.SendWR{ID: i, Opcode: verbs.WRAtomicWrite, RemoteAddr: b.va(int(i) * 8), RKey: b.mr.RKey(), Swap: i}
		if i%2 == 0 {
			wr = verbs.SendWR{ID: i, Opcode: verbs.WRFlush, RemoteAddr: b.va(0), RKey: b.mr.RKey(), FlushType: verbs.FlushGlobal, FlushLen: 64}
		}
		a.post(t, wr)
	}
	if sent := a.stack.ctr.Get(SentPkts); sent != 1 {
		t.Fatalf("%d requests sent before any answer with max_rd_atomic 1, want 1", sent)
	}
	h.run()
	wantWC(t, a.scq.take(), verbs.WC{WRID: 1, Opcode: verbs.WCAtomicWrite}, verbs.WC{WRID: 2, Opcode: verbs.WCFlush},
		verbs.WC{WRID: 3, Opcode: verbs.WCAtomicWrite}, verbs.WC{WRID: 4, Opcode: verbs.WCFlush})
	if v := binary.NativeEndian.Uint64(b.buf[24:]); v != 3 {
		t.Fatalf("remote word %d, want 3", v)
	}
}
