package scenario

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

// Buffer offsets the RoCEv2 scenarios use in each node's 64 KiB buffer.
const (
	srcOff  = 0     // what the requester sends or writes from
	dstOff  = 16384 // where a WRITE lands, a SEND is received, a READ lands
	wordOff = 60000 // the atomic word (8-byte aligned)
	origOff = 60008 // where an atomic's original value lands
)

// rc is the RC pair most scenarios use: 7 retries, RNR retries for ever,
// a 1 ms ACK timeout (4.096 µs × 2^8).
var rc = qpOptions{typ: verbs.QPTypeRC, retryCnt: 7, rnrRetry: 7, minRNRTimer: 12, timeout: 8}

// rcRetries is rc with n transport retries.
func rcRetries(n uint8) *qpOptions {
	o := rc
	o.retryCnt = n
	return &o
}

func write(id uint64, a, b *end, n int) *verbs.SendWR { return writeAt(id, a, b, n, dstOff) }

// writeAt is a WRITE of n bytes from a's source area to off in b's buffer.
func writeAt(id uint64, a, b *end, n, off int) *verbs.SendWR {
	return &verbs.SendWR{ID: id, Opcode: verbs.WRRDMAWrite, SGL: a.n.sge(srcOff, n),
		RemoteAddr: bufVA + uint64(off), RKey: b.n.mr.RKey()}
}

func read(id uint64, a, b *end, n int) *verbs.SendWR {
	return &verbs.SendWR{ID: id, Opcode: verbs.WRRDMARead, SGL: a.n.sge(dstOff, n),
		RemoteAddr: bufVA + srcOff, RKey: b.n.mr.RKey()}
}

func send(id uint64, a *end, n int) *verbs.SendWR {
	return &verbs.SendWR{ID: id, Opcode: verbs.WRSend, SGL: a.n.sge(srcOff, n)}
}

// each runs the steps in order and stops at the first error.
func each(steps ...func() error) error {
	for _, f := range steps {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// oneOp posts wr on a and awaits its completion; the QPs' states after.
func oneOp(a, b *end, wr *verbs.SendWR) error {
	if err := a.post(wr); err != nil {
		return err
	}
	a.await(1)
	a.state()
	b.state()
	return nil
}

// roceScenarios are the RoCEv2 scenarios.
var roceScenarios = []*Scenario{
	{
		Name: "rc-basics", Title: "RC: PSNs, coalesced ACKs and the MSN",
		Spec:      "IBTA Vol 1 §9.7.1 (PSNs), §9.7.5.1.1 (coalesced ACKs), §9.7.5.1.2 (MSN)",
		iwarpForm: iwarpBasics,
		Look: "each packet takes the next PSN; a 3-packet SEND, a 2-packet WRITE and a 2-packet READ: the " +
			"responder ACKs a message once, at its last packet (AckReq set), not every packet; the AETH's MSN " +
			"counts completed messages; a READ's responses carry the request's PSNs, one per response packet, " +
			"so the requester's next PSN jumps past them.",
		steps: func(s *stage, a, b *end) error {
			return each(
				func() error { return b.recv(1, dstOff, 4096) },
				func() error { return a.post(send(1, a, 3000)) },
				func() error { a.await(1); b.await(1); return nil },
				func() error { return a.post(write(2, a, b, 2048)) },
				func() error { a.await(1); return nil },
				func() error { return oneOp(a, b, read(3, a, b, 2000)) })
		},
	},
	{
		Name: "loss-timeout", Title: "RC: a lost last packet, the ACK timeout and go-back-N",
		Spec: "IBTA Vol 1 §9.7.6.1.3 (local ACK timeout), §9.7.6.1.4 (retries: go back to the oldest unacknowledged PSN)",
		Look: "the link loses the last packet of a 4-packet WRITE, so the responder has nothing to NAK: the " +
			"requester's ACK timer (about 1 ms here) expires and it sends the WRITE again from its first " +
			"unacknowledged PSN (go-back-N), counted as a retransmission; the completion is a success, 1 ms late.",
		script: nth(transport.AtoB, opRCWriteLast, 0, drop),
		steps: func(s *stage, a, b *end) error {
			return oneOp(a, b, write(1, a, b, 4000))
		},
	},
	{
		Name: "seq-nak", Title: "RC: a lost middle packet and the PSN sequence error NAK",
		Spec: "IBTA Vol 1 §9.7.5.2.1 (PSN sequence error), §9.7.5.1.3 (NAK codes)",
		Look: "the link loses the second packet of a 4-packet WRITE; the third arrives with a PSN ahead of the " +
			"expected one, so the responder drops it and sends one NAK (PSN sequence error) carrying the PSN it " +
			"expects; the requester resends from that PSN at once, without waiting for a timeout.",
		script: nth(transport.AtoB, opRCWriteMiddle, 0, drop),
		steps: func(s *stage, a, b *end) error {
			return oneOp(a, b, write(1, a, b, 4000))
		},
	},
	{
		Name: "dup-request", Title: "RC: a lost ACK, the duplicate request and its ACK",
		Spec: "IBTA Vol 1 §9.7.5.1.4 (duplicate requests), §9.7.4.1.6 (the responder ACKs a duplicate again)",
		Look: "the link loses the ACK of a SEND; the requester times out and sends the SEND again with the same " +
			"PSN; the responder sees a PSN it already executed: it does not deliver the message a second time " +
			"(one receive completion) but ACKs it again, and that ACK completes the SEND.",
		script: nth(transport.BtoA, opRCAck, 0, drop),
		steps: func(s *stage, a, b *end) error {
			return each(
				func() error { return b.recv(1, dstOff, 4096) },
				func() error { return b.recv(2, dstOff+4096, 4096) },
				func() error { return oneOp(a, b, send(1, a, 512)) },
				func() error { b.await(1); return nil })
		},
	},
	{
		Name: "rnr", Title: "RC: receiver not ready: the RNR NAK and the RNR timer",
		Spec: "IBTA Vol 1 §9.7.5.2.8 (RNR NAK), §9.7.6.1.5 (RNR retries), Table 45 (RNR timer codes)",
		Look: "rnic0 SENDs before rnic1 posted a receive: rnic1 answers with an RNR NAK whose timer field says how " +
			"long to wait (code 12: 0.64 ms); rnic0 waits that long and sends again, and again, until rnic1 posts " +
			"a receive after 1.5 ms: the next try is ACKed and both sides complete.",
		steps: func(s *stage, a, b *end) error {
			return each(
				func() error { return a.post(send(1, a, 256)) },
				func() error { s.wait(1500 * time.Microsecond); return nil },
				func() error { return b.recv(1, dstOff, 4096) },
				func() error { a.await(1); b.await(1); return nil })
		},
	},
	{
		Name: "read-retry", Title: "RC: a lost READ response and the READ retried from the gap",
		Spec: "IBTA Vol 1 §9.7.5.3 (requester: READ responses), §9.7.6.1.4 (retry of a READ from the missing PSN)",
		Look: "the link loses the middle response of a 3-packet READ; the last response arrives with a PSN past " +
			"the one expected, so the requester drops it and sends a new READ request for what is missing only: " +
			"its PSN is the lost response's, its RETH asks for the remaining bytes at the matching address.",
		script: nth(transport.BtoA, opRCReadRespMid, 0, drop),
		steps: func(s *stage, a, b *end) error {
			return oneOp(a, b, read(1, a, b, 3000))
		},
	},
	{
		Name: "atomic-replay", Title: "RC: a lost atomic ACK and the replay from the responder's cache",
		Spec: "IBTA Vol 1 §9.4.5 (atomics), o9-26/§9.7.5.1.4 (a duplicate atomic returns the saved result, not a new one)",
		Look: "the link loses the ATOMIC ACKNOWLEDGE of a FetchAdd (+5); the requester sends the FetchAdd again " +
			"with the same PSN; the responder must not add twice: it answers from the results it keeps of recent " +
			"atomics, so the original value returned is the first one and the word ends at 100 + 5.",
		script: nth(transport.BtoA, opRCAtomicAck, 0, drop),
		steps: func(s *stage, a, b *end) error {
			binary.NativeEndian.PutUint64(b.n.buf[wordOff:], 100)
			b.sync()
			wr := &verbs.SendWR{ID: 1, Opcode: verbs.WRAtomicFetchAdd, SGL: a.n.sge(origOff, 8),
				RemoteAddr: bufVA + wordOff, RKey: b.n.mr.RKey(), CompareAdd: 5}
			if err := oneOp(a, b, wr); err != nil {
				return err
			}
			s.say("rnic0 got original value %d; rnic1's word is %d",
				binary.NativeEndian.Uint64(a.n.buf[origOff:]), binary.NativeEndian.Uint64(b.n.buf[wordOff:]))
			return nil
		},
	},
	{
		Name: "retry-exc", Title: "RC: the peer is gone: retries run out (RETRY_EXC_ERR)",
		Spec: "IBTA Vol 1 §9.7.6.1.3 (timeout), §10.7.3.1 (retry count exceeded: the QP goes to the error state)",
		Look: "after one good WRITE the link loses everything rnic0 sends; with retry_cnt 2 the WRITE goes out " +
			"three times in all, a timeout apart; then it completes with RETRY_EXC_ERR, rnic0's QP is in ERR, and " +
			"the WR posted behind it is flushed (WR_FLUSH_ERR) without being sent.",
		script: dropFrom(transport.AtoB, 1),
		qp:     rcRetries(2),
		steps: func(s *stage, a, b *end) error {
			return each(
				func() error { return oneOp(a, b, write(1, a, b, 64)) },
				func() error { return a.post(write(2, a, b, 64)) },
				func() error { return a.post(write(3, a, b, 64)) },
				func() error { a.await(2); a.state(); return nil })
		},
	},
	{
		Name: "ud", Title: "UD: a datagram, its Q_Key and the GRH",
		Spec: "IBTA Vol 1 §9.8 (UD), §9.8.3.1 (Q_Key check), Annex A17.4.5.1 (the 40-byte GRH area of a RoCEv2 receive)",
		Look: "rnic0 sends one datagram to rnic1's QP: the packet carries a DETH with the Q_Key and the sender's " +
			"QPN; no ACK comes back (UD is unreliable); rnic1's receive completes with 40 bytes more than sent: " +
			"the GRH area, which for RoCEv2 over IPv4 holds the IPv4 header at its end.",
		qp: &qpOptions{typ: verbs.QPTypeUD},
		steps: func(s *stage, a, b *end) error {
			ah, err := a.n.dev.CreateAH(a.n.pd, b.n.av())
			if err != nil {
				return err
			}
			wr := &verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: a.n.sge(srcOff, 200), AH: ah.AV(),
				RemoteQPN: b.qp.QPN(), RemoteQKey: qkey}
			return each(
				func() error { return b.recv(1, dstOff, 40+1024) },
				func() error { return a.post(wr) },
				func() error { a.await(1); b.await(1); return nil })
		},
	},
	{
		Name: "uc-gap", Title: "UC: a lost middle packet: the rest of the message is dropped, silently",
		Spec: "IBTA Vol 1 §9.7.7.2 (UC responder: a PSN gap inside a message discards it; no NAK, no retry)",
		Look: "over UC the link loses the middle packet of a 3-packet WRITE; the responder notices the PSN gap, " +
			"drops the rest of that message and waits for the next FIRST or ONLY packet; nobody resends (UC has " +
			"no ACKs), the requester's completion is a success anyway, and the next WRITE lands whole.",
		script: nth(transport.AtoB, opUCWriteMiddle, 0, drop),
		qp:     &qpOptions{typ: verbs.QPTypeUC},
		steps: func(s *stage, a, b *end) error {
			return each(
				func() error { return a.post(write(1, a, b, 3000)) },
				func() error { a.await(1); return nil },
				func() error { return a.post(writeAt(2, a, b, 1000, dstOff+8192)) },
				func() error { a.await(1); s.wait(time.Millisecond); return nil },
				func() error {
					b.sync()
					s.say("rnic1's buffer holds the second WRITE's 1000 bytes: %v; the first WRITE's last packet: %v",
						same(a.n.buf[srcOff:srcOff+1000], b.n.buf[dstOff+8192:dstOff+9192]),
						same(a.n.buf[srcOff+2048:srcOff+3000], b.n.buf[dstOff+2048:dstOff+3000]))
					return nil
				})
		},
	},
	{
		Name: "icrc", Title: "RoCEv2: a corrupted packet fails its ICRC and is dropped",
		Spec: "IBTA Vol 1 Annex A17.3.3 (ICRC), §9.7.6.1.3 (the requester's timeout recovers the loss)",
		Look: "the link flips one bit in the payload of a SEND; rnic1 computes the ICRC, finds it wrong and drops " +
			"the packet without a word (a counter moves, nothing is sent back); rnic0's ACK timer expires and " +
			"it sends the SEND again, which arrives intact. In Wireshark, rnic.lua flags the bad frame: " +
			"rnic.icrc.bad.",
		script: nth(transport.AtoB, opRCSendOnly, 0, flipPayloadBit),
		steps: func(s *stage, a, b *end) error {
			return each(
				func() error { return b.recv(1, dstOff, 4096) },
				func() error { return oneOp(a, b, send(1, a, 512)) },
				func() error { b.await(1); return nil })
		},
	},
}

// same says "intact" when a and b hold the same bytes, "missing" otherwise.
func same(a, b []byte) string {
	if string(a) == string(b) {
		return "intact"
	}
	return fmt.Sprintf("missing (%d bytes differ)", diff(a, b))
}

func diff(a, b []byte) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}
