// iWARP cases: RFC 7306 §5 atomics, the Atomic Request on queue 1 and the
// Atomic Response on queue 3. A DUT without atomics (siw) makes them
// not-applicable.

package conform

import (
	"encoding/binary"
	"fmt"

	"github.com/rnic/rnic/cmd/internal/conform/iwport"
	"github.com/rnic/rnic/iwarp/wire"
)

// iwAtomicReq sends an Atomic Request on the word at the DUT buffer's
// offset off.
func iwAtomicReq(name string, op wire.AtomicOp, off uint64, data, cmp uint64) IW {
	return IWSend(name, func(s *iwSession) (wire.Headers, []byte) {
		k, addr := s.mr()
		h := iwSendHdr(wire.OpAtomicRequest, wire.QNReadRequest, s.nextMSN(wire.QNReadRequest), 0, true)
		h.AtomicRequest = wire.AtomicRequestFields{Op: op, RequestID: 0x51D0 + uint32(off), STag: k, TO: addr + off,
			AddSwapData: data, CompareData: cmp}
		if op == wire.AtomicCmpSwap {
			h.AtomicRequest.AddSwapMask, h.AtomicRequest.CompareMask = ^uint64(0), ^uint64(0)
		}
		return h, nil
	}, iwport.Tx{})
}

// iwAtomicResp wants the Atomic Response to the request at off.
func iwAtomicResp(off uint64, msn uint32, orig uint64) IW {
	return ExpectFPDU("Atomic Response", func(_ *iwSession, f *iwport.Frame) error {
		d, a := f.Hdr.DDP, f.Hdr.AtomicResponse
		if d.Opcode != wire.OpAtomicResponse || d.QN != wire.QNAtomicResponse || d.MSN != msn || d.MO != 0 || !d.Last {
			return fmt.Errorf("want an Atomic Response on QN 3 with MSN %d, got %v", msn, f)
		}
		if a.RequestID != 0x51D0+uint32(off) || a.OriginalValue != orig {
			return fmt.Errorf("Atomic Response ID %#x value %d, want ID %#x value %d", a.RequestID, a.OriginalValue, 0x51D0+uint32(off), orig)
		}
		return nil
	})
}

// iwWord is a 64-bit value as the DUT's memory holds it (host order).
func iwWord(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

var iwAtomicCases = []Case{{
	ID: "RFC7306-5.1/fetchadd", Section: "RFC 7306 §5.1", Title: "FetchAdd returns the original value on queue 3 and adds",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0), Needs: needAtomics,
	Steps: []Step{WriteMem{MR: DefaultMR, Off: 256, Data: iwWord(5)}, iwAtomicReq("FetchAdd +7", wire.AtomicFetchAdd, 256, 7, 0),
		iwAtomicResp(256, 1, 5), Memory{MR: DefaultMR, Off: 256, Want: iwWord(12)}},
	Break: iwBreak("returns a wrong original value", iwEditFPDU(iwport.Out, wire.OpAtomicResponse, func(b []byte) { b[len(b)-1] ^= 1 })),
}, {
	ID: "RFC7306-5.1/cmpswap", Section: "RFC 7306 §5.1", Title: "CmpSwap swaps on a match only and echoes the Request Identifier",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0), Needs: needAtomics,
	Steps: []Step{WriteMem{MR: DefaultMR, Off: 264, Data: iwWord(12)}, iwAtomicReq("CmpSwap 12→99", wire.AtomicCmpSwap, 264, 99, 12),
		iwAtomicResp(264, 1, 12), iwAtomicReq("CmpSwap 12→7 (no match)", wire.AtomicCmpSwap, 264, 7, 12), iwAtomicResp(264, 2, 99),
		Memory{MR: DefaultMR, Off: 264, Want: iwWord(99)}},
	Break: iwBreak("echoes a wrong Request Identifier", iwEditFPDU(iwport.Out, wire.OpAtomicResponse, func(b []byte) { b[wire.DDPUntaggedLen+3]++ })),
}, {
	ID: "RFC7306-5.1/misaligned", Section: "RFC 7306 §5.1, RFC 5040 §4.8", Title: "an Atomic Request on a misaligned word: an RDMAP Terminate with the DDP and RDMAP headers",
	Transport: IWARP, Setup: iwSetup(IWConn{}, 0, 0), Needs: needAtomics,
	Steps: []Step{iwAtomicReq("FetchAdd at offset 260", wire.AtomicFetchAdd, 260, 1, 0), IW{"expect an RDMAP Terminate", func(s *iwSession) error {
		fr, err := s.recvTerminate()
		if err != nil {
			return err
		}
		return s.judgeTerminate(fr, func(fr *iwport.Frame) error {
			if fr.Term.Code.Layer() != wire.LayerRDMAP {
				return fmt.Errorf("the Terminate %v, want an RDMAP error", fr.Term.Code)
			}
			return s.checkTerminate(fr, HdrDDPRDMA, nil)
		})
	}}, ExpectClosed},
	Break: iwBreak("closes without a Terminate", iwDropTerminate()),
}}

func init() {
	Register(iwAtomicCases...)
}
