package iwconform

import "github.com/rnic/rnic/iwarp/wire"

// Header builders for the tester's segments.

// writeHdr is an RDMA Write segment to stag at to.
func writeHdr(stag uint32, to uint64, last bool) wire.Headers {
	return wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpWrite, Tagged: true, Last: last, STag: stag, TO: to}}
}

// sendHdr is an untagged segment of opcode op on queue qn.
func sendHdr(op wire.Opcode, qn, msn, mo uint32, last bool) wire.Headers {
	return wire.Headers{DDP: wire.DDPFields{Opcode: op, Last: last, QN: qn, MSN: msn, MO: mo}}
}

// readReqHdr is an RDMA Read Request with the tester's next queue-1 MSN.
func (s *Session) readReqHdr(sinkSTag uint32, sinkTO uint64, size uint32, srcSTag uint32, srcTO uint64) wire.Headers {
	h := sendHdr(wire.OpReadRequest, wire.QNReadRequest, s.nextMSN(wire.QNReadRequest), 0, true)
	h.ReadRequest = wire.ReadRequestFields{SinkSTag: sinkSTag, SinkTO: sinkTO, Size: size, SourceSTag: srcSTag, SourceTO: srcTO}
	return h
}

// send is a whole Send message with the tester's next queue-0 MSN.
func (s *Session) send(op wire.Opcode) wire.Headers {
	return sendHdr(op, wire.QNSend, s.nextMSN(wire.QNSend), 0, true)
}

// badKey is an STag the DUT never handed out: the MR's with its
// consumer key and index changed.
func (s *Session) badKey() uint32 { return s.MR.RKey ^ 0x5A5A5A00 }
