package roce

import (
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// READ responses leave as a stream the responder sends in bursts
// (IBTA Vol 1 §9.7.5.1.4 for what a duplicate READ asks). A READ of up to
// 2 GiB is up to half a million response packets: sent in one go under the
// QP's lock it would hold that lock, and the receive path of its NIC, for
// seconds, and every duplicate READ that the requester sent meanwhile (a
// retry after a lost response) would then queue a whole replay of the rest
// behind it. So the responder sends readBurst packets at a time and
// continues from a zero-delay timer, letting requests in between:
//
//   - a duplicate request (a READ asking again from a PSN, or any earlier
//     packet) means the requester went back N: it discards whatever follows
//     the PSN it resends from, and will ask for the READ again. The stream in
//     progress is abandoned at once (a duplicate READ restarts it from its
//     PSN), so a lost response costs one replay of what was in flight, not
//     one replay of the whole remaining message per retry.
//   - any other request is answered only after the stream has been sent to
//     its end, so responses leave in PSN order.

// readBurst is how many READ responses leave before the responder lets
// requests in: a few sendmmsg batches.
const readBurst = 64

// readStream is the READ whose responses are being sent.
type readStream struct {
	active bool
	res    resource // a copy: the resource ring may reuse the slot
	next   int      // index of the next response packet
	npkts  int
}

// startStream sends the responses of res from packet k on, replacing any
// stream in progress.
func (rs *responder) startStream(res *resource, k int) {
	if rs.stream.active && rs.qp.s.tracing() {
		rs.qp.s.tracef(rs.qp.Cfg.QPN, "resp", "READ responses from psn %d on abandoned: the requester asks again", wire.PSNAdd(rs.stream.res.first, rs.stream.next))
	}
	rs.stream = readStream{active: true, res: *res, next: k, npkts: int(wire.PSNDiff(res.last, res.first)) + 1}
	rs.pump()
}

// abandonStream drops the stream in progress (the requester resends from
// an earlier PSN and discards the rest of it anyway).
func (rs *responder) abandonStream() {
	if !rs.stream.active {
		return
	}
	if qp := rs.qp; qp.s.tracing() {
		qp.s.tracef(qp.Cfg.QPN, "resp", "READ responses from psn %d on abandoned: the requester went back", wire.PSNAdd(rs.stream.res.first, rs.stream.next))
	}
	rs.stream.active = false
	rs.more.Stop()
}

// finishStream sends the rest of the stream now, before a response that
// must follow it.
func (rs *responder) finishStream() {
	for rs.stream.active {
		rs.pump()
	}
}

// pump sends the next burst of the stream and schedules the one after.
func (rs *responder) pump() {
	s := &rs.stream
	if !s.active {
		return
	}
	end := min(s.next+readBurst, s.npkts)
	if !rs.readResponses(&s.res, s.next, end) {
		s.active = false
		return
	}
	s.next = end
	if s.next >= s.npkts {
		s.active = false
		rs.more.Stop()
		return
	}
	rs.more.Set(0)
}

// streamMore is the continuation timer's expiry (caller holds qp.Mu).
func (rs *responder) streamMore() {
	switch rs.qp.CurState {
	case verbs.QPSRTR, verbs.QPSRTS, verbs.QPSSQD, verbs.QPSSQE:
		rs.pump()
	default:
		rs.stream.active = false
	}
}
