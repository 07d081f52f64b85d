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
// Engines are state machines, not threads (DESIGN.md principle 1): a QP
// reacts to three kinds of events — a work request posted, a packet
// received, a timer fired — each under the QP's lock, and emits frames,
// completions and timers. Time comes from a clock.Clock, so with the
// virtual clock and the simulated link every retry, RNR wait and timeout is
// deterministic and instant.
//
// Files: stack.go (receive demux, transmit), qp.go (QP state and attributes),
// requester.go (send queue → request packets, §9.7.2), completer.go (ACKs,
// NAKs, responses → completions, retries, the local ACK timer, §9.7.5.2,
// §9.7.6.1.3), responder.go (requests → memory, receive completions, ACKs,
// NAKs, read and atomic responses, §9.7.4, §9.7.5.1), readstream.go (READ
// responses in bursts; a duplicate request abandons the stream, §9.7.5.1.4),
// uc.go (UC responder, §9.8.2), ud.go (UD responder, §9.8.3: too-long
// datagrams dropped, class D), gsi.go (QP1), counters.go, trace.go.
package roce
