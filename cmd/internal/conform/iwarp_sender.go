// iWARP cases: the DUT as the data source of Sends and RDMA Writes
// (RFC 5040 §5.3, §5.4; RFC 5041 §5.2, §5.3), and RFC 7306 Immediate
// Data received.

package conform

import (
	"fmt"

	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
)

// iwDUTWrite has the DUT post an RDMA WRITE of n octets to the tester's
// (made up) buffer.
func iwDUTWrite(id uint64, n uint32) Post {
	return Post{{ID: id, Op: verbs.WRRDMAWrite, Local: []Seg{{MR: DefaultMR, Len: n}}, Remote: 0xB000 + id*0x100, RKey: 0x4321}}
}

// iwImmediate sends an Immediate Data message carrying imm.
func iwImmediate(imm uint32) IW {
	return IWSend(fmt.Sprintf("Immediate Data %#x", imm), func(s *iwSession) (wire.Headers, []byte) {
		h := s.send(wire.OpImmediate)
		h.Immediate = uint64(imm)
		return h, nil
	}, iwport.Tx{})
}

// iwRFC7306 marks cases a DUT without RFC 7306 fails as documented.
var iwRFC7306 = []Deviation{{Kind: "siw", Ref: "cmd/internal/conform/README.md: siw RFC 7306", Note: "RFC 7306 is not implemented"}}

var iwSenderCases = []Case{{
	ID: "RFC5041-5.3/dut-send", Section: "RFC 5041 §5.3, RFC 5040 §5.4", Title: "the DUT's Sends: untagged on queue 0, MSN 1 then 2, MO 0, L",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{iwSendWR(32), Post{{ID: 2, Op: verbs.WRSend, Local: []Seg{{MR: DefaultMR, Len: 16}}}},
		IW{"expect Sends with MSN 1 and 2", func(s *iwSession) error {
			for msn := uint32(1); msn <= 2; msn++ {
				f, err := s.port.Recv(s.wait())
				if err != nil {
					return err
				}
				s.r.Note("%v", f)
				d := f.Hdr.DDP
				if f.Err != nil || d.Opcode != wire.OpSend || d.QN != wire.QNSend || d.MSN != msn || d.MO != 0 || !d.Last {
					return fmt.Errorf("want a one-segment Send on QN 0 with MSN %d, got %v", msn, f)
				}
			}
			return nil
		}}},
	Break: iwBreak("numbers every Send 1", iwEditFPDU(iwport.Out, wire.OpSend, func(b []byte) { b[13] = 1 })),
}, {
	ID: "RFC5041-5.2/dut-write", Section: "RFC 5041 §5.2, RFC 5040 §5.3", Title: "the DUT's RDMA Write: tagged to the posted rkey and address, L, the posted octets",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0),
	Steps: []Step{WriteMem{MR: DefaultMR, Data: iwPattern(48, 21)}, iwDUTWrite(1, 48),
		ExpectFPDU("RDMA Write", func(_ *iwSession, f *iwport.Frame) error {
			d := f.Hdr.DDP
			if d.Opcode != wire.OpWrite || d.STag != 0x4321 || d.TO != 0xB100 || !d.Last {
				return fmt.Errorf("want one RDMA Write to STag 0x4321 TO 0xb100 with L=1, got %v", f)
			}
			if p := f.Seg.Payload(); string(p) != string(iwPattern(48, 21)) {
				return fmt.Errorf("the Write carries %s, want %s", short(p), short(iwPattern(48, 21)))
			}
			return nil
		}),
		Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is[uint64](1), Opcode: Is(verbs.WCRDMAWrite)}}}},
	Break: iwBreak("writes one octet late", iwEditFPDU(iwport.Out, wire.OpWrite, func(b []byte) { b[13]++ })),
}, {
	ID: "RFC7306-6.2/immediate", Section: "RFC 7306 §6.2", Title: "Immediate Data takes a receive and completes it with the immediate value",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 1), Deviations: iwRFC7306,
	Steps: []Step{iwImmediate(0xC0FFEE),
		Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is[uint64](1), Imm: Is[uint32](0xC0FFEE), Flags: Is(verbs.WCFlagWithImm)}}},
		QPState(verbs.QPSRTS)},
	Break: iwBreak("loses the immediate value", iwEditFPDU(iwport.In, wire.OpImmediate, func(b []byte) { b[len(b)-1] ^= 0xFF })),
}, {
	ID: "RFC7306-6.2/immediate-nobuf", Section: "RFC 7306 §6.2, RFC 5041 §7.2", Title: "Immediate Data with no receive posted: Terminate DDP untagged 'no buffer available'",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0), Deviations: iwRFC7306,
	Steps: iwSteps([]Step{iwImmediate(7)}, iwTerminated(HdrDDP, wire.TermDDPUntaggedNoBuffer)),
	Break: iwBreak("reports 'MSN range'", iwTermCode(wire.TermDDPUntaggedMSNRange)),
}}

func init() {
	Register(iwSenderCases...)
}
