// Package iwarp is rnic's iWARP engine: MPA connection setup (RFC 5044,
// enhanced by RFC 6581), FPDU framing, DDP tagged and untagged placement
// (RFC 5041) and RDMAP (RFC 5040, with the RFC 7306 atomics) over a byte
// stream, behind the same verbs.Provider / verbs.Engine contract as the
// RoCEv2 engine in roce.
//
// # Shape
//
// A Stack is one device's engine. It creates RC QPs (iWARP has no UC or
// UD), and it is also the device's connection manager, the Go counterpart
// of rdma_cm over iw_cm:
//
//	passive side                           active side
//	l, _ := s.Listen(addr, onRequest)
//	                                       s.Connect(qpn, addr, pd, ird, ord, done)
//	onRequest(req)  ← MPA Request
//	req.Accept(qpn, pd, ird, ord)  → MPA Reply
//	                                       done(ConnectResult{...})   QP in RTS
//	QP in RTS (sends wait for the RTR)  ← RTR (zero-length Write, Read or Send)
//	OnConnEvent(Established)               OnConnEvent(Established)
//
// The QP must be in INIT (nic's RESET→INIT with access flags) before
// Connect or Accept; the engine moves it to RTS when the connection is
// established, and to ERR when it ends (Disconnect, a Terminate, the
// stream closing or breaking).
//
// The stream under a connection is a stream.Conn from a stream.Network:
// kernel TCP in the embedded mode, the simulated network on the virtual
// clock in tests and the simulated mode. The engine never learns which.
//
// # Engine
//
// Like roce, the engine is an event → action state machine (nic/README.md,
// principle 1): events are verbs calls, stream callbacks (bytes, close,
// writable) and timers on the injected clock; actions are stream writes,
// completions, async events and timers. Each QP has one lock; stream
// callbacks never run inside stream methods, so the engine writes with its
// lock held.
//
// Send WRs follow siw's local completion semantics: a SEND or RDMA WRITE
// completes once the stream accepted all its FPDUs, an RDMA READ or atomic
// once its response arrived. Completions stay in send-queue order.
//
// An RDMAP Read Request names a single Data Sink STag and Tagged Offset,
// so an RDMA READ with several sink SGEs (up to the QP's max_send_sge) is
// sent as one Read Request per non-empty SGE, as iWARP providers do it:
// sink STag = the SGE's lkey, sink TO = its address, source = the WR's
// rkey at the remote address plus the lengths of the SGEs before it. Each
// request counts against ORD; the ones that do not fit follow as responses
// return, ahead of the WRs behind. The WR completes once every response is
// placed, with ByteLen the total; an error on any part fails it.
//
// # Immediate Data
//
// RFC 7306 Immediate Data (opcodes 8 and 9, untagged queue 0, an 8-byte
// Immediate Data header and no payload) carries the verbs immediate WRs:
//
//   - RDMA_WRITE_WITH_IMM is an RDMA Write (zero-length when the WR is)
//     followed by an Immediate Data message;
//   - SEND_WITH_IMM is an Immediate Data message alone, so it carries no
//     payload: a SEND_WITH_IMM with one is refused at post (ErrImmPayload),
//     since a Send followed by Immediate Data would take two receive WQEs;
//   - SEND_SOLICITED makes it Immediate Data with SE.
//
// The 64-bit Immediate Data field carries imm_data in its low-order 4
// octets (octets 4-7, big-endian like IB's ImmDt) and, in the high-order 4,
// flags: bit 0 (octet 3's low bit) is set when the message ends an
// RDMA_WRITE_WITH_IMM. The other flag bits are sent as 0 and ignored.
//
// At the data sink an Immediate Data message takes the next queue-0 MSN and
// consumes a receive WQE, as a Send does (none posted: a DDP "no buffer"
// Terminate); nothing is placed in the WQE's buffers. The WQE completes
// with WCFlagWithImm and Imm = the low-order 4 octets, and with the flag
// as WCRecvRDMAWithImm whose ByteLen is the length of the RDMA Write
// message placed just before it (as RoCE reports it), else as WCRecv with
// ByteLen 0. A send WR completes as WCRDMAWrite or WCSend. Config.NoImmediate
// turns all this off, as for a peer without RFC 7306.
//
// Every protocol error found on receive is answered with a Terminate
// message carrying the layer, error type and code of RFC 5040 §4.8 and the
// offending headers as siw attaches them, then the stream is closed and the
// QP moves to ERR with its WRs flushed. A received Terminate completes the
// oldest outstanding send WR with the matching verbs status and flushes
// the rest.
//
// # Where the spec lives
//
// Sections as the code's comments cite them (RFC 5044 MPA, RFC 6581
// enhanced MPA, RFC 5041 DDP, RFC 5040 RDMAP, RFC 7306 RDMAP extensions).
// Files are in this package unless named wire/ (iwarp/wire, the formats).
//
//	Spec                           File              Function(s)
//	RFC 5044 §4.1, §4.5 (FPDU,     wire/fpdu.go,     AppendFPDU, ParseFPDU,
//	  MULPDU)                      stack.go          ulpduFor
//	RFC 5044 §4.2, §4.3 (markers)  wire/marker.go,   Marker, MarkedLen,
//	                               wire/fpdu.go      appendMarked
//	RFC 5044 §4.4 (CRC-32C)        wire/crc.go,      CRC, Deframer.Next
//	                               wire/deframe.go
//	RFC 5044 §5, §6 (FPDU-aligned  cm.go,            QP.establish,
//	  send, deframing on receive)  wire/deframe.go,  Deframer,
//	                               responder.go      QP.input
//	RFC 5044 §7.1, §7.1.1 (MPA     cm.go,            Stack.Connect,
//	  Request/Reply, CRC and       wire/mpa.go       QP.handshake,
//	  marker negotiation)                            Listener.accepted,
//	                                                 cep.onData,
//	                                                 ConnRequest.Accept,
//	                                                 ConnRequest.Reject,
//	                                                 ParseMPAFrame,
//	                                                 AppendMPAFrame, Negotiate
//	RFC 5044 §8 (LLP error codes)  wire/terminate.go TermCode
//	RFC 6581 §9 (enhanced frame,   wire/mpa.go,      IRDORD, decodeIRDORD,
//	  IRD/ORD words)               cm.go             cep.onData,
//	                                                 ConnRequest.Accept,
//	                                                 QP.handshake
//	RFC 6581 §9.2 (RTR)            stack.go,         RTRMode,
//	                               requester.go,     QP.sendRTR,
//	                               responder.go      QP.receiveRTR
//	RFC 5041 §4, §4.2, §4.3 (DDP   wire/ddp.go       DDPHeader
//	  tagged/untagged headers)
//	RFC 5041 §4.4, RFC 5040 §4     wire/segment.go   Segment.Decode,
//	  (segment = DDP + RDMAP)                        AppendSegment
//	RFC 5041 §7.2 (DDP errors)     responder.go      QP.taggedFault
//	RFC 5040 §4.1, §4.2 (RDMAP     wire/opcode.go,   the opcode table,
//	  control, opcodes)            responder.go      QP.receive (dispatch),
//	                                                 QP.unexpected
//	RFC 5040 §4.4 (Read Request)   responder.go      responder.readRequest,
//	                                                 requester.readResponse
//	RFC 5040 §4.8 (Terminate)      terminate.go,     QP.sendTerminate,
//	                               responder.go      QP.receiveTerminate,
//	                                                 QP.remoteFault
//	RFC 7306 §4.2 (opcodes 8-11)   wire/opcode.go    the opcode table
//	RFC 7306 §5, §5.1 (atomics)    responder.go,     responder.atomicRequest,
//	                               wire/rdmap.go     atomicOp,
//	                                                 requester.atomicResponse,
//	                                                 AtomicRequest,
//	                                                 AtomicResponse
//	RFC 7306 §6.2 (Immediate Data) requester.go,     QP.immediateHeader,
//	                               responder.go      immFlags, responder.send
//
// Files: stack.go (Config, the Stack, QP creation), qp.go (QP state, verbs
// Modify, ERR), cm.go (MPA connection setup and teardown, the RTR hand-over),
// requester.go (send queue → FPDUs, the ORQ, Read and Atomic Responses
// placed), responder.go (FPDUs → placement, receive completions, Read and
// Atomic Requests served), terminate.go (Terminates sent and received),
// framer.go (the capture framer), counters.go, trace.go.
package iwarp
