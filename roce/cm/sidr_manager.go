package cm

import (
	"net/netip"
	"time"

	"github.com/rnic/rnic/transport/clock"
)

// SIDR in the Manager (§12.11): the client side sends a SIDR_REQ and
// retries it until a SIDR_REP with its Request ID comes or the retries run
// out; the server side offers each new request to OnSIDR and remembers its
// answer while the client may still retry, so that a retransmitted SIDR_REQ (our SIDR_REP was
// lost) gets the same SIDR_REP again instead of a second request.

// SIDRResult is how a resolution ended.
type SIDRResult struct {
	// TimedOut: no SIDR_REP came after all retries; the rest is zero.
	TimedOut  bool
	Status    SIDRStatus
	QPN, QKey uint32
	// PrivateData is a copy of the SIDR_REP's 136 bytes.
	PrivateData []byte
}

// SIDRQuery is an outstanding SIDR_REQ of the client side.
type SIDRQuery struct {
	m        *Manager
	peer     netip.Addr
	local    netip.Addr
	reqID    uint32
	done     func(SIDRResult)
	msg      [MADLen]byte
	retries  int
	wait     time.Duration
	timer    clock.Timer
	finished bool
}

// SIDRRequest is a SIDR_REQ the server side received, until answered.
type SIDRRequest struct {
	m         *Manager
	key       sidrKey
	local     netip.Addr
	tid       uint64
	serviceID uint64
	answered  bool
	reply     [MADLen]byte
}

// maxSIDRRequests bounds the request table: pending requests and the
// answers kept for retransmissions.
const maxSIDRRequests = 4096

// sidrKey identifies a client's request: its address and Request ID.
type sidrKey struct {
	peer  netip.Addr
	reqID uint32
}

// Peer returns the requester's address and the local address it asked.
func (r *SIDRRequest) Peer() (peer, local netip.Addr) { return r.key.peer, r.local }

// Resolve sends a SIDR_REQ for req.ServiceID to dst (from src) and calls
// done once, on the CM's goroutine or a timer's, with the SIDR_REP's
// answer or a timeout after MaxRetries retries. The Request ID is filled
// in here.
func (m *Manager) Resolve(dst, src netip.Addr, req SIDRREQ, done func(SIDRResult)) (*SIDRQuery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	q := &SIDRQuery{m: m, peer: dst.Unmap(), local: src.Unmap(), done: done,
		retries: int(m.cfg.MaxRetries), wait: m.retryTimeout(m.cfg.ResponseTimeout)}
	for {
		q.reqID = m.newLocalID()
		if m.sidrOut[q.reqID] == nil {
			break
		}
	}
	req.RequestID = q.reqID
	if err := req.Encode(q.msg[:], m.hiTID|uint64(q.reqID)); err != nil {
		return nil, err
	}
	m.sidrOut[q.reqID] = q
	m.send(q.peer, q.local, q.msg[:])
	q.arm()
	return q, nil
}

// Cancel stops the query; done is not called any more.
func (q *SIDRQuery) Cancel() {
	q.m.mu.Lock()
	defer q.m.mu.Unlock()
	q.finish()
}

// finish forgets the query. Caller holds mu.
func (q *SIDRQuery) finish() {
	if q.timer != nil {
		q.timer.Stop()
	}
	q.finished = true
	delete(q.m.sidrOut, q.reqID)
}

func (q *SIDRQuery) arm() {
	q.timer = q.m.cfg.Clock.AfterFunc(q.wait, q.expire)
}

// expire retries the SIDR_REQ or gives up.
func (q *SIDRQuery) expire() {
	m := q.m
	m.mu.Lock()
	if q.finished || m.closed {
		m.mu.Unlock()
		return
	}
	if q.retries > 0 {
		q.retries--
		m.ctr.retx.Add(1)
		m.send(q.peer, q.local, q.msg[:])
		q.arm()
		m.mu.Unlock()
		return
	}
	m.ctr.timeouts.Add(1)
	q.finish()
	m.mu.Unlock()
	q.done(SIDRResult{TimedOut: true})
}

// onSIDRREP ends the query the SIDR_REP answers. Caller holds mu; it
// returns the callback to run once mu is released.
func (m *Manager) onSIDRREP(src netip.Addr, mad MAD) func() {
	var rep SIDRREP
	rep.Decode(mad)
	q := m.sidrOut[rep.RequestID]
	if q == nil || q.peer != src {
		m.ctr.unknown.Add(1)
		return nil
	}
	q.finish()
	res := SIDRResult{Status: rep.Status, QPN: rep.QPN, QKey: rep.QKey,
		PrivateData: append([]byte(nil), rep.PrivateData...)}
	return func() { q.done(res) }
}

// onSIDRREQ answers a duplicate from the table or offers a new request to
// OnSIDR; without a taker it is answered "service ID not supported".
func (m *Manager) onSIDRREQ(src, dst netip.Addr, mad MAD) {
	var req SIDRREQ
	req.Decode(mad)
	key := sidrKey{src, req.RequestID}
	m.mu.Lock()
	if r := m.sidrIn[key]; r != nil {
		m.ctr.dupREQ.Add(1)
		if r.answered {
			m.ctr.retx.Add(1)
			m.send(src, dst, r.reply[:])
		}
		m.mu.Unlock()
		return // still pending: the consumer's answer will come
	}
	if len(m.sidrIn) >= maxSIDRRequests {
		// A flood of requests (answered ones are kept for sidrKeep):
		// drop, the client retries.
		m.ctr.dropped.Add(1)
		m.mu.Unlock()
		return
	}
	r := &SIDRRequest{m: m, key: key, local: dst, tid: mad.TID(), serviceID: req.ServiceID}
	m.sidrIn[key] = r
	onSIDR := m.cfg.OnSIDR
	m.mu.Unlock()
	if onSIDR == nil || !onSIDR(r, &req) {
		r.Reply(SIDRREP{Status: SIDRUnsupported})
	}
}

// Reply sends the SIDR_REP (its Request ID and ServiceID are the
// request's) and keeps it to answer duplicates for as long as a client
// configured like us goes on retrying (sidrKeep). A second Reply fails
// with ErrState.
func (r *SIDRRequest) Reply(rep SIDRREP) error {
	m := r.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.answered || m.closed {
		return ErrState
	}
	rep.RequestID, rep.ServiceID = r.key.reqID, r.serviceID
	if err := rep.Encode(r.reply[:], r.tid); err != nil {
		return err
	}
	r.answered = true
	m.send(r.key.peer, r.local, r.reply[:])
	m.cfg.Clock.AfterFunc(m.sidrKeep(), func() {
		m.mu.Lock()
		if m.sidrIn[r.key] == r {
			delete(m.sidrIn, r.key)
		}
		m.mu.Unlock()
	})
	return nil
}

// sidrKeep is how long an answered SIDR_REQ is remembered: a SIDR_REQ
// carries no timeouts, so we assume the client retries as we would
// (rdma_cm on Linux does: the same response timeout and retry count as
// for a REQ), MaxRetries times one retry timeout, and add one for the
// round trip.
func (m *Manager) sidrKeep() time.Duration {
	return time.Duration(int(m.cfg.MaxRetries)+1) * m.retryTimeout(m.cfg.ResponseTimeout)
}
