package iwconform

import (
	"encoding/binary"
	"fmt"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/tools/conform/iwport"
)

// RFC 7306 §5: Atomic Request (queue 1) and Atomic Response (queue 3).
// A DUT without atomics (siw) makes these cases not-applicable.

func needAtomics() Step {
	return Do("the DUT offers atomics", func(s *Session) error {
		if !s.DUT.Atomics() {
			return NA("the DUT offers no RFC 7306 atomics")
		}
		return nil
	})
}

// atomicReq sends an Atomic Request on the word at the DUT MR's offset
// off.
func atomicReq(name string, op wire.AtomicOp, off uint64, data, cmp uint64) Step {
	return Send(name, func(s *Session) (wire.Headers, []byte) {
		h := sendHdr(wire.OpAtomicRequest, wire.QNReadRequest, s.nextMSN(wire.QNReadRequest), 0, true)
		h.AtomicRequest = wire.AtomicRequestFields{Op: op, RequestID: 0x51D0 + uint32(off), STag: s.MR.RKey, TO: s.MR.Addr + off,
			AddSwapData: data, CompareData: cmp}
		if op == wire.AtomicCmpSwap {
			h.AtomicRequest.AddSwapMask, h.AtomicRequest.CompareMask = ^uint64(0), ^uint64(0)
		}
		return h, nil
	}, iwport.Tx{})
}

// atomicResp expects the Atomic Response to the request at off.
func atomicResp(off uint64, msn uint32, orig uint64) Step {
	return ExpectFrame("Atomic Response", func(_ *Session, f *iwport.Frame) error {
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

func word(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

func atomicCases() []Case {
	return []Case{{
		ID: "RFC7306-5.1-fetchadd", Section: "RFC 7306 §5.1", Title: "FetchAdd returns the original value on queue 3 and adds",
		Steps: []Step{needAtomics(), WriteMem(256, word(5)), atomicReq("FetchAdd +7", wire.AtomicFetchAdd, 256, 7, 0),
			atomicResp(256, 1, 5), ExpectMem(256, func(*Session) []byte { return word(12) })},
		Break: editFPDU(iwport.Out, wire.OpAtomicResponse, func(b []byte) { b[len(b)-1] ^= 1 }),
	}, {
		ID: "RFC7306-5.1-cmpswap", Section: "RFC 7306 §5.1", Title: "CmpSwap swaps on a match and echoes the Request Identifier",
		Steps: []Step{needAtomics(), WriteMem(264, word(12)), atomicReq("CmpSwap 12→99", wire.AtomicCmpSwap, 264, 99, 12),
			atomicResp(264, 1, 12), atomicReq("CmpSwap 12→7 (no match)", wire.AtomicCmpSwap, 264, 7, 12), atomicResp(264, 2, 99),
			ExpectMem(264, func(*Session) []byte { return word(99) })},
		Break: editFPDU(iwport.Out, wire.OpAtomicResponse, func(b []byte) { b[wire.DDPUntaggedLen+3]++ }),
	}, {
		ID: "RFC7306-5.1-misaligned", Section: "RFC 7306 §5.1, RFC 5040 §4.8", Title: "an Atomic Request on a misaligned word: Terminate of the RDMAP layer with the headers",
		Steps: steps([]Step{needAtomics(), atomicReq("FetchAdd at offset 260", wire.AtomicFetchAdd, 260, 1, 0)},
			[]Step{Do("expect an RDMAP Terminate", func(s *Session) error {
				fr, err := s.recvTerminate()
				if err != nil {
					return err
				}
				if fr.Term.Code.Layer() != wire.LayerRDMAP {
					return fmt.Errorf("Terminate %v, want an RDMAP error", fr.Term.Code)
				}
				return s.checkTerminate(fr, HdrDDPRDMA, nil)
			}), ExpectClosed()}),
		Break: dropTerminate(),
	}}
}
