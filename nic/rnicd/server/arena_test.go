package server_test

import (
	"testing"

	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

// createQP creates an RC QP of wr WRs each way on PD 1 and CQ 2 and
// returns its reply.
func (r *raw) createQP(wr uint32) proto.CreateQPReply {
	r.t.Helper()
	st, body := r.request(proto.OpCreateQP, &proto.CreateQPReq{PD: 1, SendCQ: 2, RecvCQ: 2, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: wr, MaxRecvWR: wr, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if st != proto.StatusOK {
		r.t.Fatalf("CREATE_QP of %d WRs: status %d (%s)", wr, st, body)
	}
	var rep proto.CreateQPReply
	rd := proto.NewReader(body)
	rep.Decode(rd)
	if err := rd.Done(); err != nil {
		r.t.Fatalf("CREATE_QP reply: %v", err)
	}
	return rep
}

// A client gets a chunk's memfd with the first object placed in it and
// none after, the rings of many objects in one chunk, a destroyed
// object's slot for the next one of its size, and an own chunk (sent each
// time, never reused) for rings larger than half a chunk.
func TestRingArena(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{Limits: server.Limits{MaxQPs: 1000}})
	r := dial(t, d.Socket)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	r.expect(proto.OpAllocPD, &proto.Empty{}, proto.StatusOK)
	r.expect(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 8}, proto.StatusOK)
	if r.fds != 1 {
		t.Errorf("first CREATE_CQ_ON reply with %d descriptors, want the chunk's", r.fds)
	}
	seen := map[proto.RingPlace]bool{}
	var qps []proto.CreateQPReply
	for i := range 100 {
		rep := r.createQP(4)
		if r.fds != 0 {
			t.Fatalf("QP %d: CREATE_QP reply with %d descriptors, want none (its chunk was sent)", i, r.fds)
		}
		if rep.Place.Chunk != 1 || rep.Place.Own || seen[rep.Place] || rep.Place.Check(rep.Ring.Size()) != nil {
			t.Fatalf("QP %d placed at %+v (seen %v), want its own place in chunk 1", i, rep.Place, seen[rep.Place])
		}
		seen[rep.Place] = true
		qps = append(qps, rep)
	}
	r.expect(proto.OpDestroyQP, &proto.Handle{H: qps[40].QP}, proto.StatusOK)
	if again := r.createQP(4); again.Place != qps[40].Place || r.fds != 0 {
		t.Errorf("after destroying the QP at %+v the next one is at %+v with %d descriptors, want its slot, none",
			qps[40].Place, again.Place, r.fds)
	}
	// 64Ki WRs each way: rings of several MiB, in a chunk of their own.
	big := r.createQP(1 << 16)
	if !big.Place.Own || big.Place.Chunk == 1 || big.Place.Offset != 0 || r.fds != 1 || big.Place.Check(big.Ring.Size()) != nil {
		t.Fatalf("a QP of %d ring bytes at %+v with %d descriptors, want an own chunk, sent", big.Ring.Size(), big.Place, r.fds)
	}
	// A client that missed a chunk's memfd asks for it again; an unknown
	// chunk, or a session before OPEN, has none.
	r.expect(proto.OpRingChunk, &proto.Handle{H: 1}, proto.StatusOK)
	if r.fds != 1 {
		t.Errorf("RING_CHUNK reply with %d descriptors, want the chunk's", r.fds)
	}
	r.expect(proto.OpRingChunk, &proto.Handle{H: 999}, proto.StatusBadHandle)
	dial(t, d.Socket).expect(proto.OpRingChunk, &proto.Handle{H: 1}, proto.StatusNoDevice)
	r.expect(proto.OpDestroyQP, &proto.Handle{H: big.QP}, proto.StatusOK)
	r.expect(proto.OpRingChunk, &proto.Handle{H: big.Place.Chunk}, proto.StatusBadHandle) // gone with its QP
	if big2 := r.createQP(1 << 16); !big2.Place.Own || big2.Place.Chunk <= big.Place.Chunk || r.fds != 1 {
		t.Errorf("the next big QP at %+v with %d descriptors, want a new own chunk after %d, sent", big2.Place, r.fds, big.Place.Chunk)
	}
}

// The session is charged for whole chunks: with a limit of two chunks, a
// session fits the objects two chunks hold and is refused the next, and
// a destroyed object makes room again.
func TestRingArenaLimit(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{Limits: server.Limits{MaxQPs: 10000, MaxRingBytes: 2 * proto.ArenaChunkLen}})
	r := dial(t, d.Socket)
	r.expect(proto.OpOpen, &proto.OpenReq{Version: proto.Version, Name: "rnic0"}, proto.StatusOK)
	r.expect(proto.OpAllocPD, &proto.Empty{}, proto.StatusOK)
	r.expect(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 8}, proto.StatusOK) // one page
	// A QP of 4 WRs each way takes a page: the two chunks hold the CQ
	// and 2·512−1 QPs.
	n := 2*proto.ArenaChunkLen/proto.ArenaPage - 1
	var last proto.CreateQPReply
	for i := range n {
		last = r.createQP(4)
		if last.Place.Chunk > 2 {
			t.Fatalf("QP %d in chunk %d", i, last.Place.Chunk)
		}
	}
	msg := r.expect(proto.OpCreateQP, &proto.CreateQPReq{PD: 1, SendCQ: 2, RecvCQ: 2, Type: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}, proto.StatusLimit)
	if msg == "" {
		t.Error("over-limit CREATE_QP refused without a message")
	}
	r.expect(proto.OpCreateCQOn, &proto.CreateCQOnReq{CQE: 8}, proto.StatusLimit)
	r.expect(proto.OpDestroyQP, &proto.Handle{H: last.QP}, proto.StatusOK)
	if again := r.createQP(4); again.Place != last.Place {
		t.Errorf("after a destroy the QP lands at %+v, want the freed %+v", again.Place, last.Place)
	}
}
