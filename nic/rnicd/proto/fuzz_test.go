// Fuzz targets of the decoders that read what a client (or a daemon)
// wrote: control messages, send and receive WQEs, ring indices and
// layouts. None may panic; bounded work; what decodes re-encodes to the
// same bytes.

package proto

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

func FuzzDecodeMessage(f *testing.F) {
	for _, op := range Ops() {
		b, _ := BodiesOf(op)
		for kind, mk := range map[Kind]func() Message{KindRequest: b.Request, KindReply: b.Reply} {
			if mk == nil {
				continue
			}
			f.Add(AppendMessage(nil, Header{Op: op, Kind: kind, Seq: 1}, mk()), uint8(0))
		}
	}
	f.Add(AppendError(nil, OpOpen, 3, StatusNoDevice, "no such device"), uint8(0))
	place := RingPlace{Chunk: 1, ChunkLen: ArenaChunkLen, Offset: 8 * ArenaPage}
	for _, m := range []Message{&CreateQPReply{Place: place}, &CreateSRQReply{Place: place}, &CreateCQOnReply{CreateCQReply: CreateCQReply{Place: place}}} {
		f.Add(AppendMessage(nil, Header{Op: replyOp(m), Kind: KindReply, Seq: 2}, m), uint8(1))
	}
	// Completion channels: the replies as the daemon makes
	// them, a CQ request on a channel.
	f.Add(AppendMessage(nil, Header{Op: OpCreateChannel, Kind: KindReply, Seq: 3},
		&CreateChannelReply{Channel: 7, Place: place}), uint8(2))
	f.Add(AppendMessage(nil, Header{Op: OpCreateCQOn, Kind: KindReply, Seq: 4},
		&CreateCQOnReply{CreateCQReply: CreateCQReply{CQ: 9, Ring: CQLayout{Slots: 64, Cap: 63}, Place: place}, Slot: 499}), uint8(1))
	f.Add(AppendMessage(nil, Header{Op: OpCreateCQOn, Kind: KindRequest, Seq: 5}, &CreateCQOnReq{CQE: 63, Channel: 7}), uint8(0))
	// Host ports: a request with its TAP descriptor, the reply.
	f.Add(AppendMessage(nil, Header{Op: OpAttachHostPort, Kind: KindRequest, Seq: 6, NFDs: 1},
		&AttachHostPortReq{Device: "rnic0"}), uint8(1))
	f.Add(AppendMessage(nil, Header{Op: OpAttachHostPort, Kind: KindReply, Seq: 6},
		&AttachHostPortReply{MAC: [6]byte{2, 0, 10, 50, 0, 4}, MTU: 1500, Prefixes: []netip.Prefix{netip.MustParsePrefix("10.50.0.4/24")}}), uint8(0))
	f.Fuzz(func(t *testing.T, msg []byte, nfds uint8) {
		h, body, err := DecodeMessage(msg, int(nfds%8))
		if err != nil {
			return
		}
		m, err := DecodeBody(h, body)
		if err != nil || m == nil {
			return
		}
		again := AppendMessage(nil, h, m)
		if !bytes.Equal(again[HeaderLen:], body) {
			t.Fatalf("%v %v: body % x re-encodes as % x", h.Op, h.Kind, body, again[HeaderLen:])
		}
		if p, ok := placeOf(m); ok && p.Check(0) == nil && p.Offset > p.ChunkLen {
			t.Fatalf("%v: place %+v passes its check outside its chunk", h.Op, p)
		}
	})
}

// replyOp is the op whose reply m is (a create reply naming a place).
func replyOp(m Message) Op {
	switch m.(type) {
	case *CreateQPReply:
		return OpCreateQP
	case *CreateSRQReply:
		return OpCreateSRQ
	}
	return OpCreateCQOn
}

// placeOf returns the arena place of a create reply.
func placeOf(m Message) (RingPlace, bool) {
	switch m := m.(type) {
	case *CreateQPReply:
		return m.Place, true
	case *CreateSRQReply:
		return m.Place, true
	case *CreateCQReply:
		return m.Place, true
	case *CreateCQOnReply:
		return m.Place, true
	case *CreateChannelReply:
		return m.Place, true
	}
	return RingPlace{}, false
}

// FuzzRingPlace: a place passes its check only if the rings it names lie
// inside a chunk of a size the daemon makes.
func FuzzRingPlace(f *testing.F) {
	f.Add(uint32(1), false, uint64(ArenaChunkLen), uint64(ArenaPage), uint64(3000))
	f.Add(uint32(2), true, uint64(5*ArenaPage), uint64(0), uint64(5*ArenaPage))
	f.Fuzz(func(t *testing.T, chunk uint32, own bool, chunkLen, off, size uint64) {
		p := RingPlace{Chunk: chunk, Own: own, ChunkLen: chunkLen, Offset: off}
		if p.Check(size) != nil {
			return
		}
		if chunk == 0 || off%ArenaPage != 0 || off+size > chunkLen || off+size < off ||
			chunkLen > MaxOwnChunk || (!own && chunkLen != ArenaChunkLen) || (own && off != 0) {
			t.Fatalf("place %+v of %d bytes passes its check", p, size)
		}
	})
}

func FuzzSendWQE(f *testing.F) {
	slot := make([]byte, SendSlotSize(4, 64))
	PutSendWQE(slot, &verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{{Addr: 1, Length: 2, LKey: 3}}}, 0, 0)
	f.Add(slot, uint8(4), uint8(64))
	PutSendWQE(slot, &verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendInline}, 9, 10)
	f.Add(slot, uint8(1), uint8(16))
	PutSendWQE(slot, &verbs.SendWR{ID: 3, Opcode: verbs.WRFlush, FlushType: verbs.FlushTypes, FlushLevel: verbs.FlushMR, FlushLen: 99}, 0, 0)
	f.Add(slot, uint8(0), uint8(0))
	bind := make([]byte, SendSlotSize(0, 0))
	PutSendWQE(bind, &verbs.SendWR{ID: 3, Opcode: verbs.WRBindMW, Bind: verbs.MWBind{Window: 0x101, MR: 0x202, Length: 8, Access: 4, RKey: 0x102}}, 0, 0)
	f.Add(bind, uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, slot []byte, maxSGE, maxInline uint8) {
		sgl := make([]verbs.SGE, maxSGE)
		inline := make([]byte, maxInline)
		var wr verbs.SendWR
		ah, err := DecodeSendWQE(slot, &wr, sgl, inline)
		if err != nil {
			return
		}
		if len(wr.SGL) > int(maxSGE) || len(wr.Inline) > int(maxInline) {
			t.Fatalf("decoded %d SGEs, %d inline bytes beyond the buffers", len(wr.SGL), len(wr.Inline))
		}
		again := make([]byte, len(slot))
		copy(SendPayload(again), wr.Inline)
		if err := PutSendWQE(again, &wr, ah, len(wr.Inline)); err != nil {
			t.Fatalf("a decoded WQE does not re-encode: %v", err)
		}
		var wr2 verbs.SendWR
		if _, err := DecodeSendWQE(again, &wr2, make([]verbs.SGE, maxSGE), make([]byte, maxInline)); err != nil {
			t.Fatalf("re-encoded WQE does not decode: %v", err)
		}
		if wr2.Bind != wr.Bind {
			t.Fatalf("a BIND_MW's bind changed on the way: %+v, then %+v", wr.Bind, wr2.Bind)
		}
	})
}

func FuzzRecvWQE(f *testing.F) {
	slot := make([]byte, RecvSlotSize(2))
	PutRecvWQE(slot, &verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{Addr: 1, Length: 2, LKey: 3}}})
	f.Add(slot, uint8(2))
	f.Fuzz(func(t *testing.T, slot []byte, maxSGE uint8) {
		var wr verbs.RecvWR
		if err := DecodeRecvWQE(slot, &wr, make([]verbs.SGE, maxSGE)); err != nil {
			return
		}
		if len(wr.SGL) > int(maxSGE) || RecvWQEHeaderLen+len(wr.SGL)*SGELen > len(slot) {
			t.Fatalf("%d SGEs decoded from a %d-byte slot into %d", len(wr.SGL), len(slot), maxSGE)
		}
	})
}

// FuzzRings: any layout either is refused or gives views whose every slot
// lies in the memory, and producer indices are accepted exactly when they
// are at most a ring ahead.
func FuzzRings(f *testing.F) {
	f.Add(uint32(8), uint32(128), uint32(8), uint32(4), uint32(64), uint32(3), uint32(5), uint32(2))
	f.Add(uint32(0), uint32(0), uint32(0), uint32(1), uint32(64), uint32(1), uint32(1), uint32(0))
	f.Fuzz(func(t *testing.T, sqs, sqz, sqc, rqs, rqz, rqc, prod, cons uint32) {
		l := RingLayout{SQSlots: sqs, SQSlotSize: sqz, SQCap: sqc, RQSlots: rqs, RQSlotSize: rqz, RQCap: rqc}
		if l.Validate() != nil || l.Size() > 64<<20 {
			return
		}
		mem := make([]byte, l.Size())
		w, err := NewWorkRings(mem, l)
		if err != nil {
			t.Fatalf("valid layout %+v refused: %v", l, err)
		}
		for _, r := range []*WorkRing{&w.SQ, &w.RQ} {
			if r.Slots() == 0 {
				continue
			}
			for _, i := range []uint32{prod, cons, prod - cons, 0, r.Slots() - 1} {
				if s := r.Slot(i); len(s) != int(r.SlotSize()) {
					t.Fatalf("slot %d of %d bytes", i, len(s))
				}
			}
			n, err := r.CheckProducer(prod, cons)
			if (err == nil) != (prod-cons <= r.Slots()) || n > r.Slots() {
				t.Fatalf("CheckProducer(%d, %d) in %d slots = %d, %v", prod, cons, r.Slots(), n, err)
			}
		}
		cl := CQLayout{Slots: sqs, Cap: sqc}
		if cl.Validate() == nil && cl.Size() <= 64<<20 {
			c, err := NewCQRing(make([]byte, cl.Size()), cl)
			if err != nil {
				t.Fatalf("valid CQ layout %+v refused: %v", cl, err)
			}
			if s := c.Slot(prod); len(s) != WCSlotLen {
				t.Fatalf("CQ slot of %d bytes", len(s))
			}
		}
	})
}
