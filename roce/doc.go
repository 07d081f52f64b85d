// Package roce is rnic's RoCEv2 transport engine: the reliable-connection
// (RC) requester, completer and responder of IBTA Vol 1 chapter 9, driven by
// PSNs, ACKs, NAKs and timers, on top of the wire format in roce/wire.
//
// A Stack is one device's RoCEv2 engine attached to one link (a
// transport.Endpoint carrying Ethernet frames). It implements
// verbs.Provider: nic creates QPs through it and validates every verb before
// it reaches the engine. Frames from the link are decoded, their ICRC
// checked, and dispatched by destination QP.
//
// Engines are state machines, not threads (nic/README.md, principle 1): a QP
// reacts to three kinds of events — a work request posted, a packet
// received, a timer fired — each under the QP's lock, and emits frames,
// completions and timers. Time comes from a clock.Clock, so with the
// virtual clock and the simulated link every retry, RNR wait and timeout is
// deterministic and instant.
//
// # Where the spec lives
//
// Section and rule numbers are IBTA Vol 1 (chapter 9 and Annex A17 for
// RoCEv2) as the code's comments cite them; a rule marked "rxe" is cited
// as Linux rxe's source cites or implements it.
//
//	Spec                          File            Function(s)
//	A17.4 (frame, UDP 4791)       wire/frame.go   Frame.Decode
//	A17.3.3 (ICRC)                wire/icrc.go,   ICRC, Frame.VerifyICRC,
//	                              stack.go        Stack.input (drops)
//	§9.2, §9.3 (BTH, ext. hdrs)   wire/*.go       BTH, RETH, AETH, DETH, ...
//	C9-34 (malformed → dropped)   wire/packet.go  Packet.Decode
//	§9.7.1 (PSN arithmetic)       wire/psn.go     PSNDiff, PSNAdd
//	§9.7.2 (requester)            requester.go    PostSend, progress,
//	                                              sendRequest, packets
//	§9.7.4, §9.7.5.1 (responder   responder.go    QP.receive, request,
//	  order of checks)                            execute
//	§9.7.5.1.1 CHK_PSN, one seq.  respchecks.go,  checkPSN,
//	  error NAK per gap           respnak.go      nakSequenceError
//	§9.7.5.1.3 CHK_OP_SEQ (C)     respchecks.go   checkOpSeq
//	CHK_OP_VALID (QP access)      respchecks.go   checkOpValid
//	CHK_RESOURCE                  respchecks.go   checkResource
//	  (max_dest_rd_atomic)
//	§9.7.5.1.3 CHK_LENGTH,        respchecks.go   checkLength,
//	  C9-94 (rxe: DMA ≤ 2^31)                     checkWriteLength,
//	                                              checkDMALength
//	CHK_RKEY (whole range first)  respchecks.go   checkRKey
//	EXECUTE                       responder.go    send, write, read, atomic
//	§9.7.5.1.4, C9-105 (rxe:      responder.go,   duplicate, findResource,
//	  duplicates, READ replay)    readstream.go   startStream, abandonStream
//	C9-148 (rxe: MSN at READ)     responder.go    read, finishMessage
//	§9.7.5.2 (NAK codes)          respnak.go      nakInvalidRequest,
//	                                              nakRemoteAccess,
//	                                              nakRemoteOperational
//	§9.7.5.2.3 (invalid request)  respnak.go      reject, nakAccess
//	§9.7.5.2.8 (RNR NAK)          respnak.go      nakRNR
//	§9.7.5.2, §9.9.2 (completer)  completer.go    handleResponse, handleAck,
//	                                              handleReadResponse,
//	                                              handleAtomicAck, retry
//	§9.7.6.1.3 (local ACK timer,  completer.go,   ackTimeout, armRetransmit,
//	  retry counters)             requester.go    retransmitTimeout
//	§9.7.7.2 (credits)            completer.go,   updateCredits, credits
//	                              responder.go
//	(not the spec's: congestion   window.go       window, lossWindow,
//	  window under its bounds)                    timeoutWindow, growWindow
//	§9.7.7.2, §9.7.1 (bounds      budget.go       haveBudget, settleBudget,
//	  from above only: a stack                    releaseAllBudget,
//	  budget of unacked bytes)                    wakeBudget
//	IBTA 1.5 ATOMIC WRITE, FLUSH  respibta15.go,  atomicWrite, flushRequest,
//	  (rxe ≥ 6.2: empty READ      respchecks.go,  flushNeeds,
//	  Response Only answers)      completer.go    duplicateRespOnly,
//	                                              handleIBTA15Response
//	§9.8.2, §9.9.3.2 (UC)         uc.go           ucRequest, ucSend, ucWrite
//	§9.8.3, §11.4.1.1 (UD)        ud.go           udReceive
//	C10-93.1.1 (rxe: UD > MTU)    qp.go           newQP
//	§10.2.4 (privileged Q_Key)    requester.go    sendRequest
//	§10.3.1, §10.3.1.3 (ERR, SQE) qp.go           enterError, enterSQE
//	§11.4.2.1 (CQ overrun)        qp.go           raise
//	§13.5.1, C13-13 (QP1, GSI)    gsi.go          gsiInput, SendGSI
//	chapter 12 (CM)               cm/             see cm's doc.go
//
// Files: stack.go (receive demux, transmit), qp.go (QP state and attributes),
// requester.go (send queue → request packets, §9.7.2), completer.go (ACKs,
// NAKs, responses → completions, retries, the local ACK timer, §9.7.5.2,
// §9.7.6.1.3), window.go (how many PSNs a requester keeps unacknowledged,
// below the spec's bounds), budget.go (the bytes all requesters of the
// stack keep unacknowledged together, shared in turns), responder.go (requests → memory, receive completions, ACKs,
// read and atomic responses, §9.7.4, §9.7.5.1), respchecks.go (the
// responder's check steps), respnak.go (its NAKs), readstream.go (READ
// responses in bursts; a duplicate request abandons the stream, §9.7.5.1.4),
// respibta15.go (IBTA 1.5's ATOMIC WRITE and FLUSH at the responder), uc.go (UC responder, §9.8.2), ud.go (UD responder, §9.8.3: too-long
// datagrams dropped, class D), gsi.go (QP1), counters.go, trace.go.
package roce
