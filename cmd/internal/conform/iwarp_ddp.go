// iWARP cases: DDP, RFC 5041: tagged placement (§5.2) and untagged
// placement (§5.3), and their errors (§7.2), each reported with a
// Terminate carrying the offending DDP header (RFC 5040 §4.8), after
// which the stream ends and the QP is in ERR.

package conform

import (
	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// iwTerminated is the tail every error case shares: the Terminate with its
// code and headers, the stream's end, the QP in ERR.
func iwTerminated(rule HdrRule, codes ...wire.TermCode) []Step {
	return []Step{ExpectTerminate(rule, codes...), ExpectClosed, QPState(verbs.QPSErr)}
}

func iwSteps(parts ...[]Step) []Step {
	var all []Step
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// iwWriteAt is an RDMA Write of n pattern octets to stag at the DUT
// buffer's offset off (as an address).
func iwWriteAt(name string, stag func(s *iwSession) uint32, off uint64, n int) IW {
	return IWSend(name, func(s *iwSession) (wire.Headers, []byte) {
		_, addr := s.mr()
		return iwWriteHdr(stag(s), addr+off, true), iwPattern(n, 9)
	}, iwport.Tx{})
}

// iwWithDV builds a segment with DDP version dv.
func iwWithDV(h wire.Headers, payload []byte, dv byte) []byte {
	b := wire.AppendSegment(nil, &h, payload)
	b[0] = b[0]&^0x03 | dv
	return b
}

var iwTaggedCases = []Case{{
	ID: "RFC5041-5.2/write", Section: "RFC 5041 §5.2, RFC 5040 §5.3", Title: "an RDMA Write is placed at its STag and TO, unanswered",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{iwWriteAt("RDMA Write 64B", iwRKeyOf, 128, 64), ExpectSilence,
		Memory{MR: DefaultMR, Off: 128, Want: iwPattern(64, 9)}, QPState(verbs.QPSRTS)},
	Break: iwBreak("places Writes 8 octets late", iwEditFPDU(iwport.In, wire.OpWrite, func(b []byte) { b[13] += 8 })),
}, {
	ID: "RFC5041-7.2/tagged-stag", Section: "RFC 5041 §7.2, RFC 5040 §4.8", Title: "a Write to an invalid STag: Terminate DDP tagged 'invalid STag' with the DDP header",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{iwWriteAt("RDMA Write to an invalid STag", (*iwSession).badKey, 0, 32)},
		iwTerminated(HdrDDP, wire.TermDDPTaggedInvalidSTag)),
	Break: iwBreak("reports base/bounds", iwTermCode(wire.TermDDPTaggedBaseBounds)),
}, {
	ID: "RFC5041-7.2/tagged-bounds", Section: "RFC 5041 §7.2, RFC 5040 §4.8", Title: "a Write past the buffer's end: Terminate DDP tagged 'base or bounds violation'",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{iwWriteAt("RDMA Write across the end", iwRKeyOf, iwMRSize-16, 64)},
		iwTerminated(HdrDDP, wire.TermDDPTaggedBaseBounds)),
	Break: iwBreak("reports an invalid STag", iwTermCode(wire.TermDDPTaggedInvalidSTag)),
}, {
	ID: "RFC5041-7.2/tagged-base", Section: "RFC 5041 §7.2, RFC 5040 §4.8", Title: "a Write below the buffer's base: Terminate DDP tagged 'base or bounds violation' with the DDP header",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{IWSend("RDMA Write below the base", func(s *iwSession) (wire.Headers, []byte) {
		k, addr := s.mr()
		return iwWriteHdr(k, addr-16, true), iwPattern(32, 1)
	}, iwport.Tx{})}, iwTerminated(HdrDDP, wire.TermDDPTaggedBaseBounds)),
	Break: iwBreak("sends Terminates without headers", iwTermNoHeaders()),
}, {
	ID: "RFC5041-7.2/tagged-access", Section: "RFC 5041 §7.2, RFC 5040 §4.8", Title: "a Write to a buffer without remote write access: Terminate (DDP 'invalid STag' or RDMAP 'access rights')",
	Transport: IWARP, Setup: iwSetup(IWConn{}, memory.LocalWrite|memory.RemoteRead, 0),
	Steps: iwSteps([]Step{iwWriteAt("RDMA Write to a read-only buffer", iwRKeyOf, 0, 32)},
		iwTerminated(HdrDDP, wire.TermDDPTaggedInvalidSTag, wire.TermRDMAPAccessRights)),
	Break: iwBreak("closes without a Terminate", iwDropTerminate()),
}, {
	ID: "RFC5041-7.2/tagged-version", Section: "RFC 5041 §4.1, §7.2", Title: "a tagged segment of DDP version 2: Terminate DDP tagged 'invalid DDP version'",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{IWSendRaw("RDMA Write with DV=2", func(s *iwSession) []byte {
		k, addr := s.mr()
		return iwWithDV(iwWriteHdr(k, addr, true), iwPattern(16, 2), 2)
	})}, iwTerminated(HdrAny, wire.TermDDPTaggedVersion)),
	Break: iwBreak("reports the untagged version code", iwTermCode(wire.TermDDPUntaggedVersion)),
}, {
	ID: "RFC5040-4.1/rdmap-version", Section: "RFC 5040 §4.1, §4.8", Title: "RDMAP version 2: Terminate RDMAP 'invalid RDMAP version'",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{IWSendRaw("RDMA Write with RV=2", func(s *iwSession) []byte {
		k, addr := s.mr()
		h := iwWriteHdr(k, addr, true)
		b := wire.AppendSegment(nil, &h, iwPattern(16, 3))
		b[1] = b[1]&^0xC0 | 2<<6
		return b
	})}, iwTerminated(HdrAny, wire.TermRDMAPVersion)),
	Break: iwBreak("reports an unexpected opcode", iwTermCode(wire.TermRDMAPUnexpectedOpcode)),
}, {
	ID: "RFC5040-4.2/reserved-opcode", Section: "RFC 5040 §4.2, §4.8", Title: "a reserved opcode (13): Terminate RDMAP 'unexpected opcode'",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{IWSendRaw("opcode 13", func(*iwSession) []byte {
		h := iwSendHdr(wire.OpSend, wire.QNSend, 1, 0, true)
		b := wire.AppendSegment(nil, &h, nil)
		b[1] = b[1]&^0x0F | 13
		return b
	})}, iwTerminated(HdrAny, wire.TermRDMAPUnexpectedOpcode)),
	Break: iwBreak("closes without a Terminate", iwDropTerminate()),
}}

// iwSendOf is a one-segment Send of n pattern octets, edited by edit.
func iwSendOf(name string, n int, edit func(h *wire.Headers)) IW {
	return IWSend(name, func(s *iwSession) (wire.Headers, []byte) {
		h := s.send(wire.OpSend)
		if edit != nil {
			edit(&h)
		}
		return h, iwPattern(n, 5)
	}, iwport.Tx{})
}

var iwUntaggedCases = []Case{{
	ID: "RFC5041-5.3/send", Section: "RFC 5041 §5.3, RFC 5040 §5.4", Title: "a two-segment Send is placed by MO and completes the receive",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 1),
	Steps: []Step{
		IWSend("Send part 1 (MO 0)", func(*iwSession) (wire.Headers, []byte) {
			return iwSendHdr(wire.OpSend, wire.QNSend, 1, 0, false), iwPattern(200, 5)[:120]
		}, iwport.Tx{}),
		IWSend("Send part 2 (MO 120, L)", func(*iwSession) (wire.Headers, []byte) {
			return iwSendHdr(wire.OpSend, wire.QNSend, 1, 120, true), iwPattern(200, 5)[120:]
		}, iwport.Tx{}),
		Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is[uint64](1), Opcode: Is(verbs.WCRecv), Len: Is[uint32](200)}}},
		Memory{MR: DefaultMR, Off: 0, Want: iwPattern(200, 5)},
	},
	Break: iwBreak("takes the last segment's MO 4 octets late", iwEditFPDU(iwport.In, wire.OpSend, func(b []byte) {
		if b[0]&0x40 != 0 {
			b[17] += 4
		}
	})),
}, {
	ID: "RFC5041-7.2/untagged-qn", Section: "RFC 5041 §7.2, RFC 5040 §4.2", Title: "a Send on queue 5: Terminate DDP untagged 'invalid QN' with the DDP header",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 1),
	Steps: iwSteps([]Step{iwSendOf("Send on QN 5", 16, func(h *wire.Headers) { h.DDP.QN = 5 })},
		iwTerminated(HdrDDP, wire.TermDDPUntaggedInvalidQN)),
	Break: iwBreak("sends Terminates without headers", iwTermNoHeaders()),
}, {
	ID: "RFC5041-7.2/untagged-msn", Section: "RFC 5041 §5.3, §7.2", Title: "a Send with an MSN far ahead: Terminate DDP untagged 'MSN range is not valid'",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 1),
	Steps: iwSteps([]Step{iwSendOf("Send with MSN 1000", 16, func(h *wire.Headers) { h.DDP.MSN = 1000 })},
		iwTerminated(HdrDDP, wire.TermDDPUntaggedMSNRange)),
	Break: iwBreak("reports 'no buffer'", iwTermCode(wire.TermDDPUntaggedNoBuffer)),
}, {
	ID: "RFC5041-7.2/untagged-mo", Section: "RFC 5041 §5.3, §7.2", Title: "a message whose first segment has MO 64: Terminate DDP untagged 'invalid MO'",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 1),
	Steps: iwSteps([]Step{iwSendOf("Send starting at MO 64", 16, func(h *wire.Headers) { h.DDP.MO = 64 })},
		iwTerminated(HdrDDP, wire.TermDDPUntaggedInvalidMO)),
	Break: iwBreak("reports 'too long'", iwTermCode(wire.TermDDPUntaggedTooLong)),
}, {
	ID: "RFC5041-7.2/untagged-nobuf", Section: "RFC 5041 §5.3, §7.2", Title: "a Send with no receive posted: Terminate DDP untagged 'no buffer available'",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: iwSteps([]Step{iwSendOf("Send, nothing posted", 16, nil)},
		iwTerminated(HdrDDP, wire.TermDDPUntaggedNoBuffer)),
	Break: iwBreak("reports 'MSN range'", iwTermCode(wire.TermDDPUntaggedMSNRange)),
}, {
	ID: "RFC5041-7.2/untagged-toolong", Section: "RFC 5041 §7.2", Title: "a Send longer than the receive: Terminate DDP untagged 'message too long', the receive fails",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 1),
	Steps: iwSteps([]Step{iwSendOf("Send of 300B into 256B", 300, nil)},
		iwTerminated(HdrDDP, wire.TermDDPUntaggedTooLong), []Step{NoWCSuccess}),
	Break: iwBreak("closes without a Terminate", iwDropTerminate()),
}, {
	ID: "RFC5041-7.2/untagged-version", Section: "RFC 5041 §4.1, §7.2", Title: "an untagged segment of DDP version 0: Terminate DDP untagged 'invalid DDP version'",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 1),
	Steps: iwSteps([]Step{IWSendRaw("Send with DV=0", func(s *iwSession) []byte {
		return iwWithDV(s.send(wire.OpSend), iwPattern(16, 4), 0)
	})}, iwTerminated(HdrAny, wire.TermDDPUntaggedVersion)),
	Break: iwBreak("reports the tagged version code", iwTermCode(wire.TermDDPTaggedVersion)),
}, {
	ID: "RFC5040-4.2/send-inv-mr", Section: "RFC 5040 §4.2, §4.8", Title: "Send with Invalidate naming an ordinary MR: Terminate 'STag cannot be invalidated', the receive fails",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 1),
	Steps: iwSteps([]Step{IWSend("Send with Invalidate of the MR's STag", func(s *iwSession) (wire.Headers, []byte) {
		h := s.send(wire.OpSendInvalidate)
		h.DDP.RsvdULP = iwRKeyOf(s)
		return h, iwPattern(16, 6)
	}, iwport.Tx{})}, iwTerminated(HdrAny, wire.TermRDMAPOpCannotInvalidate, wire.TermRDMAPProtCannotInvalidate),
		[]Step{NoWCSuccess}),
	Break: iwBreak("reports an unspecified error", iwTermCode(wire.TermRDMAPOpUnspecified)),
}}

func init() {
	Register(iwTaggedCases...)
	Register(iwUntaggedCases...)
}
