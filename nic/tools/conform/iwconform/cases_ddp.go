package iwconform

import (
	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/tools/conform/iwport"
	"github.com/rnic/rnic/nic/verbs"
)

// DDP, RFC 5041: tagged placement (§5.2, §7.2 tagged buffer errors) and
// untagged placement (§5.3, §7.2 untagged buffer errors); every error is
// reported with a Terminate carrying the offending DDP header (RFC 5040
// §4.8), after which the stream ends and the QP is in ERR.

// terminated is the tail every error case shares: the Terminate with its
// code and headers, the stream's end, the QP in ERR.
func terminated(rule HdrRule, codes ...wire.TermCode) []Step {
	return []Step{ExpectTerminate(rule, codes...), ExpectClosed(), ExpectQPState(verbs.QPSErr)}
}

func steps(parts ...[]Step) []Step {
	var all []Step
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// writeAt is an RDMA Write of n pattern octets to stag at the DUT MR's
// offset off (as an address).
func writeAt(name string, stag func(s *Session) uint32, off uint64, n int) Step {
	return Send(name, func(s *Session) (wire.Headers, []byte) {
		return writeHdr(stag(s), s.MR.Addr+off, true), pattern(n, 9)
	}, iwport.Tx{})
}

func rkey(s *Session) uint32 { return s.MR.RKey }

// rawDDP edits the first octet of a segment (T, L, reserved, DV).
func withDV(h wire.Headers, payload []byte, dv byte) []byte {
	b := wire.AppendSegment(nil, &h, payload)
	b[0] = b[0]&^0x03 | dv
	return b
}

func taggedCases() []Case {
	return []Case{{
		ID: "RFC5041-5.2-write", Section: "RFC 5041 §5.2, RFC 5040 §5.3", Title: "an RDMA Write is placed at STag and TO",
		Steps: []Step{writeAt("RDMA Write 64B", rkey, 128, 64), ExpectSilence(),
			ExpectMem(128, func(*Session) []byte { return pattern(64, 9) }), ExpectQPState(verbs.QPSRTS)},
		Break: editFPDU(iwport.In, wire.OpWrite, func(b []byte) { b[13] += 8 }),
	}, {
		ID: "RFC5041-7.2-tagged-stag", Section: "RFC 5041 §7.2, RFC 5040 §4.8", Title: "Write to an invalid STag: Terminate DDP tagged 'invalid STag' with the DDP header",
		Steps: steps([]Step{writeAt("RDMA Write to an invalid STag", (*Session).badKey, 0, 32)},
			terminated(HdrDDP, wire.TermDDPTaggedInvalidSTag)),
		Break: termCode(wire.TermDDPTaggedBaseBounds),
	}, {
		ID: "RFC5041-7.2-tagged-bounds", Section: "RFC 5041 §7.2, RFC 5040 §4.8", Title: "Write past the buffer's end: Terminate DDP tagged 'base or bounds violation'",
		Steps: steps([]Step{writeAt("RDMA Write across the end", rkey, MRSize-16, 64)},
			terminated(HdrDDP, wire.TermDDPTaggedBaseBounds)),
		Break: termCode(wire.TermDDPTaggedInvalidSTag),
	}, {
		ID: "RFC5041-7.2-tagged-base", Section: "RFC 5041 §7.2, RFC 5040 §4.8", Title: "Write below the buffer's base: Terminate DDP tagged 'base or bounds violation'",
		Steps: steps([]Step{Send("RDMA Write below the base", func(s *Session) (wire.Headers, []byte) {
			return writeHdr(s.MR.RKey, s.MR.Addr-16, true), pattern(32, 1)
		}, iwport.Tx{})}, terminated(HdrDDP, wire.TermDDPTaggedBaseBounds)),
		Break: termNoHeaders(),
	}, {
		ID: "RFC5041-7.2-tagged-access", Section: "RFC 5041 §7.2, RFC 5040 §4.8", Title: "Write to a buffer without remote write access: Terminate (DDP invalid STag or RDMAP access rights)",
		Setup: Setup{Access: memory.LocalWrite | memory.RemoteRead},
		Steps: steps([]Step{writeAt("RDMA Write to a read-only buffer", rkey, 0, 32)},
			terminated(HdrDDP, wire.TermDDPTaggedInvalidSTag, wire.TermRDMAPAccessRights)),
		Break: dropTerminate(),
	}, {
		ID: "RFC5041-7.2-tagged-version", Section: "RFC 5041 §4.1, §7.2", Title: "a tagged segment with DDP version 2: Terminate DDP tagged 'invalid DDP version'",
		Steps: steps([]Step{SendRaw("RDMA Write with DV=2", func(s *Session) []byte {
			return withDV(writeHdr(s.MR.RKey, s.MR.Addr, true), pattern(16, 2), 2)
		})}, terminated(HdrAny, wire.TermDDPTaggedVersion)),
		Break: termCode(wire.TermDDPUntaggedVersion),
	}, {
		ID: "RFC5040-4.1-rdmap-version", Section: "RFC 5040 §4.1, §4.8", Title: "RDMAP version 2: Terminate RDMAP 'invalid RDMAP version'",
		Steps: steps([]Step{SendRaw("RDMA Write with RV=2", func(s *Session) []byte {
			h := writeHdr(s.MR.RKey, s.MR.Addr, true)
			b := wire.AppendSegment(nil, &h, pattern(16, 3))
			b[1] = b[1]&^0xC0 | 2<<6
			return b
		})}, terminated(HdrAny, wire.TermRDMAPVersion)),
		Break: termCode(wire.TermRDMAPUnexpectedOpcode),
	}, {
		ID: "RFC5040-4.2-reserved-opcode", Section: "RFC 5040 §4.2, §4.8", Title: "a reserved opcode (13): Terminate RDMAP 'unexpected opcode'",
		Steps: steps([]Step{SendRaw("opcode 13", func(s *Session) []byte {
			h := sendHdr(wire.OpSend, wire.QNSend, 1, 0, true)
			b := wire.AppendSegment(nil, &h, nil)
			b[1] = b[1]&^0x0F | 13
			return b
		})}, terminated(HdrAny, wire.TermRDMAPUnexpectedOpcode)),
		Break: dropTerminate(),
	}}
}

// sendOf is a one-segment Send of n pattern octets.
func sendOf(name string, n int, edit func(s *Session, h *wire.Headers)) Step {
	return Send(name, func(s *Session) (wire.Headers, []byte) {
		h := s.send(wire.OpSend)
		if edit != nil {
			edit(s, &h)
		}
		return h, pattern(n, 5)
	}, iwport.Tx{})
}

func untaggedCases() []Case {
	return []Case{{
		ID: "RFC5041-5.3-send", Section: "RFC 5041 §5.3, RFC 5040 §5.4", Title: "a two-segment Send is placed by MO and completes the receive",
		Setup: Setup{Recvs: 1},
		Steps: []Step{
			Send("Send part 1 (MO 0)", func(*Session) (wire.Headers, []byte) {
				return sendHdr(wire.OpSend, wire.QNSend, 1, 0, false), pattern(200, 5)[:120]
			}, iwport.Tx{}),
			Send("Send part 2 (MO 120, L)", func(*Session) (wire.Headers, []byte) {
				return sendHdr(wire.OpSend, wire.QNSend, 1, 120, true), pattern(200, 5)[120:]
			}, iwport.Tx{}),
			ExpectWC(100, verbs.WCSuccess, verbs.WCRecv, 200),
			ExpectMem(0, func(*Session) []byte { return pattern(200, 5) }),
		},
		Break: editFPDU(iwport.In, wire.OpSend, func(b []byte) {
			if b[0]&0x40 != 0 { // the last segment lands 4 octets later
				b[17] += 4
			}
		}),
	}, {
		ID: "RFC5041-7.2-untagged-qn", Section: "RFC 5041 §7.2, RFC 5040 §4.2", Title: "a Send on queue 5: Terminate DDP untagged 'invalid QN' with the DDP header",
		Setup: Setup{Recvs: 1},
		Steps: steps([]Step{sendOf("Send on QN 5", 16, func(_ *Session, h *wire.Headers) { h.DDP.QN = 5 })},
			terminated(HdrDDP, wire.TermDDPUntaggedInvalidQN)),
		Break: termNoHeaders(),
	}, {
		ID: "RFC5041-7.2-untagged-msn", Section: "RFC 5041 §5.3, §7.2", Title: "a Send with an MSN far ahead: Terminate DDP untagged 'MSN range is not valid'",
		Setup: Setup{Recvs: 1},
		Steps: steps([]Step{sendOf("Send with MSN 1000", 16, func(_ *Session, h *wire.Headers) { h.DDP.MSN = 1000 })},
			terminated(HdrDDP, wire.TermDDPUntaggedMSNRange)),
		Break: termCode(wire.TermDDPUntaggedNoBuffer),
	}, {
		ID: "RFC5041-7.2-untagged-mo", Section: "RFC 5041 §5.3, §7.2", Title: "a message's first segment at MO 64: Terminate DDP untagged 'invalid MO'",
		Setup: Setup{Recvs: 1},
		Steps: steps([]Step{sendOf("Send starting at MO 64", 16, func(_ *Session, h *wire.Headers) { h.DDP.MO = 64 })},
			terminated(HdrDDP, wire.TermDDPUntaggedInvalidMO)),
		Break: termCode(wire.TermDDPUntaggedTooLong),
	}, {
		ID: "RFC5041-7.2-untagged-nobuf", Section: "RFC 5041 §5.3, §7.2", Title: "a Send with no receive posted: Terminate DDP untagged 'no buffer available'",
		Steps: steps([]Step{sendOf("Send, nothing posted", 16, nil)},
			terminated(HdrDDP, wire.TermDDPUntaggedNoBuffer)),
		Break: termCode(wire.TermDDPUntaggedMSNRange),
	}, {
		ID: "RFC5041-7.2-untagged-toolong", Section: "RFC 5041 §7.2", Title: "a Send longer than the receive buffer: Terminate DDP untagged 'message too long', receive fails",
		Setup: Setup{Recvs: 1},
		Steps: steps([]Step{sendOf("Send of 300B into 256B", 300, nil)},
			terminated(HdrDDP, wire.TermDDPUntaggedTooLong), []Step{ExpectNoWCSuccess()}),
		Break: dropTerminate(),
	}, {
		ID: "RFC5041-7.2-untagged-version", Section: "RFC 5041 §4.1, §7.2", Title: "an untagged segment with DDP version 0: Terminate DDP untagged 'invalid DDP version'",
		Setup: Setup{Recvs: 1},
		Steps: steps([]Step{SendRaw("Send with DV=0", func(s *Session) []byte {
			return withDV(s.send(wire.OpSend), pattern(16, 4), 0)
		})}, terminated(HdrAny, wire.TermDDPUntaggedVersion)),
		Break: termCode(wire.TermDDPTaggedVersion),
	}, {
		ID: "RFC5040-4.2-send-inv-mr", Section: "RFC 5040 §4.2, §4.8 (RFC 7146)", Title: "Send with Invalidate naming an ordinary MR: Terminate 'STag cannot be invalidated', receive fails",
		Setup: Setup{Recvs: 1},
		Steps: steps([]Step{Send("Send with Invalidate of the MR's STag", func(s *Session) (wire.Headers, []byte) {
			h := s.send(wire.OpSendInvalidate)
			h.DDP.RsvdULP = s.MR.RKey
			return h, pattern(16, 6)
		}, iwport.Tx{})}, terminated(HdrAny, wire.TermRDMAPOpCannotInvalidate, wire.TermRDMAPProtCannotInvalidate),
			[]Step{ExpectNoWCSuccess()}),
		Break: termCode(wire.TermRDMAPOpUnspecified),
	}}
}
