// RoCEv2 RC requester cases: the DUT sends, the tester plays its
// responder (IBTA Vol 1 §9.7.5.2 the requester's side of ACKs and NAKs,
// §9.7.6.1.3 the local ACK timer and retry counters, §9.7.7.2 credits).
// The tester answers from rocepeer, or stays silent, and times the DUT's
// retransmissions against rocepeer's windows.

package conform

import (
	"fmt"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/cmd/internal/conform/rocepeer"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

func init() {
	Register(ackTimerCases()...)
	Register(rnrCases()...)
	Register(nakCases()...)
	Register(impliedCases()...)
	Register(requestFormatCases()...)
}

// reqAttrs sets the requester timing attributes of a case.
func reqAttrs(timeout, retry, rnrRetry uint8) func(a *QPAttrs) {
	return func(a *QPAttrs) { a.Timeout, a.RetryCnt, a.RNRRetry = timeout, retry, rnrRetry }
}

// ackAt acknowledges the DUT's requests up to rel, each a one-packet
// message: the AETH's MSN counts them (§9.7.5.1.5).
func ackAt(rel int) Step { return ackMsgs(rel, rel+1) }

// ackMsgs acknowledges the DUT's requests up to rel, msgs messages in all.
func ackMsgs(rel, msgs int) Step {
	return Func{Name: "ACK", F: func(r *Run) error {
		resp := peerResponder(r)
		resp.MSN = uint32(msgs) & wire.PSNMask
		_, err := sendPeer(r, resp.ACK(r.DUTPSN(rel)))
		return err
	}}
}

func ackTimerCases() []Case {
	return []Case{
		{
			ID: "9.7.6.1.3/ack-timeout", Section: "IBTA Vol 1 §9.7.6.1.3", Transport: RoCE,
			Title: "an unanswered request is sent again after the local ACK timeout (4.096 µs × 2^timeout), not before",
			Setup: Setup{Attr: reqAttrs(12, 7, 7)},
			Steps: []Step{
				Post{wrSend(1, 0, 64)},
				Func{Name: "retransmission within the timeout's window", F: func(r *Run) error {
					f0, err := dutRequestAt(r, "SEND", DefaultWithin, 0, wire.RCSendOnly)
					if err != nil {
						return err
					}
					w := rocepeer.AckTimeoutWindow(r.Attrs.Timeout)
					w.Hi = r.Bound(w.Hi)
					f1, err := dutRequestAt(r, "retransmission", w.Hi, 0, wire.RCSendOnly)
					if err != nil {
						return err
					}
					r.Note("resent after %v, window %v", f1.At.Sub(f0.At).Round(10*time.Microsecond), w)
					return w.Check("retransmission", f1.At.Sub(f0.At))
				}},
				ackAt(0),
				Poll{Want: []WCWant{wcOK(1)}},
			},
			Break: repeatsBreak(),
		},
		retryExhausted("9.7.6.1.3/retry-exhausted", 2, nil),
		retryExhausted("9.7.6.1.3/retry-cnt-7", 7, []Deviation{{Kind: "rxe", Ref: "cmd/internal/conform/README.md: rxe retries",
			Note: "rxe treats retry_cnt 7 as infinite (only rnr_retry 7 is)"}}),
	}
}

// retryExhausted: with a silent responder the DUT sends its request
// retry_cnt+1 times, then completes it with RETRY_EXC_ERR and the QP
// enters ERR. 7 is a count like any other (only rnr_retry has an infinite
// value).
func retryExhausted(id string, retry uint8, dev []Deviation) Case {
	return Case{
		ID: id, Section: "IBTA Vol 1 §9.7.6.1.3, §10.3.1", Transport: RoCE, Deviations: dev,
		Title: "a silent responder: retry_cnt+1 transmissions, then RETRY_EXC_ERR and the QP in ERR",
		Setup: Setup{Attr: reqAttrs(10, retry, 7)},
		Steps: []Step{
			Post{wrSend(1, 0, 64), wrSend(2, 64, 64)},
			Func{Name: "count transmissions", F: func(r *Run) error {
				quiet := rocepeer.AckTimeoutWindow(r.Attrs.Timeout).Hi
				// The second SEND (psn+1) rides along; count the first.
				n, err := dutTransmissions(r, 0, 1, quiet, int(r.Attrs.RetryCnt)+4, nil)
				if err != nil {
					return err
				}
				if want := int(r.Attrs.RetryCnt) + 1; n != want {
					return fmt.Errorf("%d transmissions of psn+0, want retry_cnt+1 = %d", n, want)
				}
				return nil
			}},
			Poll{Want: []WCWant{wcFailed(1, verbs.WCRetryExcErr), wcFailed(2, verbs.WCWRFlushErr)}},
			QPState(verbs.QPSErr),
		},
		Break: repeatsBreak(),
	}
}

func rnrCases() []Case {
	cs := []Case{}
	// 0 is the longest wait of the table (655.36 ms), not none.
	for _, code := range []uint8{22, 24, 26, 0} {
		cs = append(cs, rnrWait(code))
	}
	return append(cs,
		rnrRetryExhausted(),
		rnrRetry7(),
		rnrNAKAcksEarlier(),
	)
}

func rnrRetryExhausted() Case {
	return Case{
		ID: "9.7.5.2.8/rnr-retry-exhausted", Section: "IBTA Vol 1 §9.7.5.2.8, §9.7.6.1.4", Transport: RoCE,
		Title: "RNR NAKs for every try: rnr_retry+1 transmissions, then RNR_RETRY_EXC_ERR and the QP in ERR",
		Setup: Setup{Attr: reqAttrs(18, 7, 2)},
		Steps: []Step{
			Post{wrSend(1, 0, 64)},
			Func{Name: "RNR NAK every transmission", F: func(r *Run) error {
				n, err := dutTransmissions(r, 0, 0, DefaultQuiet, 8, func(f *Frame) error {
					_, err := sendPeer(r, peerResponder(r).RNRNAK(f.H.BTH.PSN, 1))
					return err
				})
				if err == nil && n != int(r.Attrs.RNRRetry)+1 {
					err = fmt.Errorf("%d transmissions, want rnr_retry+1 = %d", n, r.Attrs.RNRRetry+1)
				}
				return err
			}},
			Poll{Want: []WCWant{wcFailed(1, verbs.WCRNRRetryExcErr)}},
			QPState(verbs.QPSErr),
		},
		Break: repeatsBreak(),
	}
}

func rnrRetry7() Case {
	return Case{
		ID: "9.7.6.1.4/rnr-retry-7", Section: "IBTA Vol 1 §9.7.6.1.4, §11.2.4.2 (rnr_retry 7: infinite)", Transport: RoCE,
		Title: "rnr_retry 7 retries for ever: ten RNR NAKs, then an ACK, and the SEND succeeds",
		Setup: Setup{Attr: reqAttrs(18, 7, 7)},
		Steps: []Step{
			Post{wrSend(1, 0, 64)},
			Func{Name: "nine RNR NAKs, then an ACK", F: func(r *Run) error {
				k := 0
				n, err := dutTransmissions(r, 0, 0, DefaultQuiet, 12, func(f *Frame) error {
					k++
					p := peerResponder(r).RNRNAK(f.H.BTH.PSN, 1)
					if k == 10 {
						p = peerResponder(r).ACK(f.H.BTH.PSN)
					}
					_, err := sendPeer(r, p)
					return err
				})
				if err == nil && n != 10 {
					err = fmt.Errorf("%d transmissions, want 10 (nine RNR NAKs, then the ACK)", n)
				}
				return err
			}},
			Poll{Want: []WCWant{wcOK(1)}},
			QPState(verbs.QPSRTS),
		},
		Break: repeatsBreak(),
	}
}

func rnrNAKAcksEarlier() Case {
	return Case{
		ID: "9.7.5.2.8/rnr-nak-acks-earlier", Section: "IBTA Vol 1 §9.7.5.2.8", Transport: RoCE,
		Title: "an RNR NAK acknowledges the PSNs before it: the earlier SEND completes, the NAKed one is resent",
		Setup: Setup{Attr: reqAttrs(18, 7, 7)},
		Steps: []Step{
			Post{wrSend(1, 0, 64), wrSend(2, 64, 64)},
			Func{Name: "both SENDs, RNR NAK the second", F: func(r *Run) error {
				if _, err := dutRequestAt(r, "first SEND", DefaultWithin, 0, wire.RCSendOnly); err != nil {
					return err
				}
				if _, err := dutRequestAt(r, "second SEND", DefaultWithin, 1, wire.RCSendOnly); err != nil {
					return err
				}
				_, err := sendPeer(r, peerResponder(r).RNRNAK(r.DUTPSN(1), 18))
				return err
			}},
			Poll{Want: []WCWant{wcOK(1)}, Within: 500 * time.Millisecond},
			Func{Name: "the second SEND again", F: func(r *Run) error {
				_, err := dutRequestAt(r, "resent SEND", DefaultWithin, 1, wire.RCSendOnly)
				return err
			}},
			ackAt(1),
			Poll{Want: []WCWant{wcOK(2)}},
		},
		Break: inBreak("reads an RNR NAK's PSN one lower", rocepeer.Syndromes(wire.AckTypeRNRNAK), shiftPSN(-1)),
	}
}

// rnrWait: after an RNR NAK with timer code c the DUT resends no sooner
// than the time Table 45 gives the code (and not much later).
func rnrWait(code uint8) Case {
	return Case{
		ID: fmt.Sprintf("9.7.5.2.8/rnr-timer-%d", code), Section: "IBTA Vol 1 §9.7.5.2.8, Table 45", Transport: RoCE,
		Title: fmt.Sprintf("after an RNR NAK with timer code %d the DUT waits %v before it resends", code, wire.RNRDelay(code)),
		Setup: Setup{Attr: reqAttrs(18, 7, 7)},
		Steps: []Step{
			Post{wrSend(1, 0, 64)},
			Func{Name: "RNR NAK, then time the resend", F: func(r *Run) error {
				if _, err := dutRequestAt(r, "SEND", DefaultWithin, 0, wire.RCSendOnly); err != nil {
					return err
				}
				at, err := sendPeer(r, peerResponder(r).RNRNAK(r.DUTPSN(0), code))
				if err != nil {
					return err
				}
				w := rocepeer.RNRWindow(code)
				w.Hi = r.Bound(w.Hi)
				f, err := dutRequestAt(r, "resent SEND", w.Hi, 0, wire.RCSendOnly)
				if err != nil {
					return err
				}
				d := f.At.Sub(at)
				r.Note("resent %v after the RNR NAK, window %v", d.Round(10*time.Microsecond), w)
				return w.Check("resend", d)
			}},
			ackAt(0),
			Poll{Want: []WCWant{wcOK(1)}},
		},
		Break: inBreak("reads every RNR NAK as timer code 1 (0.01 ms)", rocepeer.Syndromes(wire.AckTypeRNRNAK),
			rocepeer.SetSyndrome(wire.RNRNAKSyndrome(1))),
	}
}

func nakCases() []Case {
	return []Case{
		nakError("9.7.5.2.2/nak-invalid-request", "§9.7.5.2.2", wire.NAKInvalidRequest, verbs.WCRemInvReqErr, wire.NAKRemoteAccess),
		nakError("9.7.5.2.3/nak-remote-access", "§9.7.5.2.3", wire.NAKRemoteAccess, verbs.WCRemAccessErr, wire.NAKRemoteOpError),
		nakError("9.7.5.2.4/nak-remote-operational", "§9.7.5.2.4", wire.NAKRemoteOpError, verbs.WCRemOpErr, wire.NAKInvalidRequest),
		{
			ID: "9.7.5.2/nak-acks-earlier", Section: "IBTA Vol 1 §9.7.5.2", Transport: RoCE,
			Title: "a NAK acknowledges the PSNs before it: the earlier SEND succeeds, the NAKed one fails",
			Setup: Setup{Attr: reqAttrs(18, 7, 7)},
			Steps: []Step{
				Post{wrSend(1, 0, 64), wrSend(2, 64, 64)},
				Func{Name: "both SENDs, NAK the second", F: func(r *Run) error {
					if _, err := dutRequestAt(r, "first SEND", DefaultWithin, 0, wire.RCSendOnly); err != nil {
						return err
					}
					if _, err := dutRequestAt(r, "second SEND", DefaultWithin, 1, wire.RCSendOnly); err != nil {
						return err
					}
					_, err := sendPeer(r, peerResponder(r).NAK(r.DUTPSN(1), wire.NAKRemoteAccess))
					return err
				}},
				Poll{Want: []WCWant{wcOK(1), wcFailed(2, verbs.WCRemAccessErr)}},
				QPState(verbs.QPSErr),
			},
			Break: inBreak("reads a NAK's PSN one lower", rocepeer.Syndromes(wire.AckTypeNAK), shiftPSN(-1)),
		},
		{
			ID: "9.7.5.2.1/seq-nak-resend", Section: "IBTA Vol 1 §9.7.5.2.1", Transport: RoCE,
			Title: "a PSN sequence error NAK: earlier PSNs complete, the DUT resends from the NAKed PSN at once",
			Setup: Setup{Attr: reqAttrs(18, 7, 7)},
			Steps: []Step{
				Post{wrSend(1, 0, 64), wrSend(2, 64, 64), wrSend(3, 128, 64)},
				Func{Name: "three SENDs, NAK sequence error at the second", F: func(r *Run) error {
					for i := range 3 {
						if _, err := dutRequestAt(r, "SEND", DefaultWithin, i, wire.RCSendOnly); err != nil {
							return err
						}
					}
					_, err := sendPeer(r, peerResponder(r).NAK(r.DUTPSN(1), wire.NAKPSNSeqError))
					return err
				}},
				Poll{Want: []WCWant{wcOK(1)}, Within: 500 * time.Millisecond},
				Func{Name: "resent from the NAKed PSN before the ACK timeout", F: func(r *Run) error {
					// timeout 18 is 1.07 s: a resend this soon answers the NAK.
					for i := 1; i < 3; i++ {
						if _, err := dutRequestAt(r, "resent SEND", 500*time.Millisecond, i, wire.RCSendOnly); err != nil {
							return err
						}
					}
					return nil
				}},
				ackAt(2),
				Poll{Want: []WCWant{wcOK(2), wcOK(3)}},
			},
			Break: repeatsBreak(),
		},
	}
}

// nakError: a NAK with code c completes the request with status st and
// moves the QP to ERR; the WRs behind it are flushed and nothing is
// retried. The Break reads the NAK as code other.
func nakError(id, sec string, c wire.NAKCode, st verbs.WCStatus, other wire.NAKCode) Case {
	return Case{
		ID: id, Section: "IBTA Vol 1 " + sec + ", §10.3.1", Transport: RoCE,
		Title: fmt.Sprintf("NAK %v: the WR completes with %v, the next is flushed, the QP enters ERR, nothing is resent", c, st),
		Setup: Setup{Attr: reqAttrs(12, 7, 7)},
		Steps: []Step{
			Post{{ID: 1, Op: verbs.WRRDMAWrite, Local: []Seg{{MR: DefaultMR, Len: 64}}, Remote: 0x10000, RKey: 0x1234},
				wrSend(2, 64, 64)},
			Func{Name: "NAK the WRITE", F: func(r *Run) error {
				if _, err := dutRequestAt(r, "WRITE", DefaultWithin, 0, wire.RCWriteOnly); err != nil {
					return err
				}
				_, err := sendPeer(r, peerResponder(r).NAK(r.DUTPSN(0), c))
				r.Vars["nak"] = r.Sent
				return err
			}},
			Poll{Want: []WCWant{wcFailed(1, st), wcFailed(2, verbs.WCWRFlushErr)}},
			QPState(verbs.QPSErr),
			Func{Name: "no retransmission", F: func(r *Run) error {
				// The SEND may have left before the NAK arrived, and on a
				// slow machine the WRITE again (timeout 12: 17 ms) before
				// the tester's NAK went; after the NAK, neither may come.
				skipBefore(r, r.Vars["nak"].(int), 20*time.Millisecond)
				_, err := dutTransmissions(r, 0, 1, 200*time.Millisecond, 0, nil)
				return err
			}},
		},
		Break: inBreak("reads NAK "+c.String()+" as "+other.String(), rocepeer.Syndromes(wire.AckTypeNAK),
			rocepeer.SetSyndrome(wire.NAKSyndrome(other))),
	}
}

// Remote memory the DUT's READs and atomics name: the tester plays the
// responder, so any address and key will do.
const (
	peerVA   = 0x7000_0000
	peerRKey = 0x0000_1234
)

// readPattern is what the tester's "memory" returns to a READ.
func peerReadData(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0xA0 + i%61)
	}
	return b
}

func wrRead(id uint64, off uint64, n uint32) WR {
	return WR{ID: id, Op: verbs.WRRDMARead, Local: []Seg{{MR: DefaultMR, Off: off, Len: n}}, Remote: peerVA, RKey: peerRKey}
}

func wrFetchAdd(id uint64, off uint64, add uint64) WR {
	return WR{ID: id, Op: verbs.WRAtomicFetchAdd, Local: []Seg{{MR: DefaultMR, Off: off, Len: 8}},
		Remote: peerVA + 0x100, RKey: peerRKey, CompareAdd: add}
}

// answerAll answers every DUT request still arriving for d: READs with
// readPattern, atomics with orig (a replay: the saved result), SENDs and
// WRITEs with an ACK.
func answerAll(r *Run, d time.Duration, orig uint64) error {
	for {
		f, ok := nextBy(r, r.Bound(d))
		if !ok {
			return nil
		}
		if err := wellFormed(r, &f); err != nil {
			return err
		}
		r.Note("%s", describeRequest(r, &f))
		resp := peerResponder(r)
		var ps []rocepeer.Packet
		switch f.Op().Info().Kind {
		case wire.KindReadRequest:
			ps = resp.ReadResponses(f.H.BTH.PSN, peerReadData(int(f.H.RETH.Length)), r.Attrs.PathMTU.Bytes())
		case wire.KindFetchAdd, wire.KindCmpSwap:
			ps = []rocepeer.Packet{resp.AtomicAck(f.H.BTH.PSN, orig)}
		default:
			if f.H.BTH.AckReq {
				ps = []rocepeer.Packet{resp.ACK(f.H.BTH.PSN)}
			}
		}
		if _, err := sendPeer(r, ps...); err != nil {
			return err
		}
	}
}

// impliedOrig is the original value the tester's atomic ACKs return.
const impliedOrig = 0x1111_2222_3333_4444

func impliedCases() []Case {
	return []Case{
		impliedNAKRead(),
		impliedNAKAtomic(),
		impliedACK(),
		coalescedACK(),
		ghostACK(),
		duplicateACK(),
		readOutOfOrder(),
		credits(),
	}
}

func impliedNAKRead() Case {
	return Case{
		ID: "9.7.5.2/implied-nak-read", Section: "IBTA Vol 1 §9.7.5.2 (implied NAK), §9.9.2", Transport: RoCE,
		Title: "an atomic ACK beyond an unanswered READ: the DUT resends the READ at once, then both complete",
		Setup: Setup{Attr: reqAttrs(18, 7, 7)},
		Steps: []Step{
			Post{wrRead(1, 0, 64), wrFetchAdd(2, 128, 5)},
			Func{Name: "answer only the atomic", F: func(r *Run) error {
				if _, err := dutRequestAt(r, "READ", DefaultWithin, 0, wire.RCReadRequest); err != nil {
					return err
				}
				if _, err := dutRequestAt(r, "FetchAdd", DefaultWithin, 1, wire.RCFetchAdd); err != nil {
					return err
				}
				_, err := sendPeer(r, peerResponder(r).AtomicAck(r.DUTPSN(1), impliedOrig))
				return err
			}},
			Func{Name: "the READ again, before the ACK timeout", F: func(r *Run) error {
				_, err := dutRequestAt(r, "resent READ", 500*time.Millisecond, 0, wire.RCReadRequest)
				if err == nil {
					_, err = sendPeer(r, peerResponder(r).ReadResponses(r.DUTPSN(0), peerReadData(64), r.Attrs.PathMTU.Bytes())...)
				}
				if err == nil {
					err = answerAll(r, 100*time.Millisecond, impliedOrig)
				}
				return err
			}},
			Poll{Want: []WCWant{wcOK(1), wcOK(2)}},
			Memory{MR: DefaultMR, Off: 0, Want: peerReadData(64)},
			Memory{MR: DefaultMR, Off: 128, Want: le64(impliedOrig)},
		},
		Break: repeatsBreak(),
	}
}

func impliedNAKAtomic() Case {
	return Case{
		ID: "9.7.5.2/implied-nak-atomic", Section: "IBTA Vol 1 §9.7.5.2 (implied NAK), §9.9.2", Transport: RoCE,
		Title: "a READ response beyond an unanswered atomic: the DUT resends the atomic at once, then both complete",
		Setup: Setup{Attr: reqAttrs(18, 7, 7)},
		Steps: []Step{
			Post{wrFetchAdd(1, 128, 5), wrRead(2, 0, 64)},
			Func{Name: "answer only the READ", F: func(r *Run) error {
				if _, err := dutRequestAt(r, "FetchAdd", DefaultWithin, 0, wire.RCFetchAdd); err != nil {
					return err
				}
				if _, err := dutRequestAt(r, "READ", DefaultWithin, 1, wire.RCReadRequest); err != nil {
					return err
				}
				_, err := sendPeer(r, peerResponder(r).ReadResponses(r.DUTPSN(1), peerReadData(64), r.Attrs.PathMTU.Bytes())...)
				return err
			}},
			Func{Name: "the atomic again, before the ACK timeout", F: func(r *Run) error {
				_, err := dutRequestAt(r, "resent FetchAdd", 500*time.Millisecond, 0, wire.RCFetchAdd)
				if err == nil {
					_, err = sendPeer(r, peerResponder(r).AtomicAck(r.DUTPSN(0), impliedOrig))
				}
				if err == nil {
					err = answerAll(r, 100*time.Millisecond, impliedOrig)
				}
				return err
			}},
			Poll{Want: []WCWant{wcOK(1), wcOK(2)}},
			Memory{MR: DefaultMR, Off: 128, Want: le64(impliedOrig)},
			Memory{MR: DefaultMR, Off: 0, Want: peerReadData(64)},
		},
		Break: repeatsBreak(),
	}
}

func impliedACK() Case {
	return Case{
		ID: "9.7.5.2/implied-ack", Section: "IBTA Vol 1 §9.7.5.2 (implied ACK)", Transport: RoCE,
		Title: "a READ response acknowledges the SEND before it: both complete, the SEND is not resent",
		Setup: Setup{Attr: reqAttrs(16, 7, 7)},
		Steps: []Step{
			Post{wrSend(1, 256, 64), wrRead(2, 0, 64)},
			Func{Name: "answer only the READ", F: func(r *Run) error {
				if _, err := dutRequestAt(r, "SEND", DefaultWithin, 0, wire.RCSendOnly); err != nil {
					return err
				}
				if _, err := dutRequestAt(r, "READ", DefaultWithin, 1, wire.RCReadRequest); err != nil {
					return err
				}
				_, err := sendPeer(r, peerResponder(r).ReadResponses(r.DUTPSN(1), peerReadData(64), r.Attrs.PathMTU.Bytes())...)
				return err
			}},
			Poll{Want: []WCWant{wcOK(1), wcOK(2)}, Within: time.Second},
			Memory{MR: DefaultMR, Off: 0, Want: peerReadData(64)},
			ExpectNone{What: "a retransmission", For: 200 * time.Millisecond},
		},
		Break: &Break{Name: "loses READ responses", In: rocepeer.Drop(rocepeer.Opcodes(wire.RCReadResponseOnly))},
	}
}

func coalescedACK() Case {
	return Case{
		ID: "9.7.5.1.2/coalesced-ack", Section: "IBTA Vol 1 §9.7.5.1.2 (coalesced ACK)", Transport: RoCE,
		Title: "one ACK for the last of three SENDs completes all three",
		Setup: Setup{Attr: reqAttrs(14, 7, 7)},
		Steps: []Step{
			Post{wrSend(1, 0, 64), wrSend(2, 64, 64), wrSend(3, 128, 64)},
			Func{Name: "three SENDs, one ACK", F: func(r *Run) error {
				for i := range 3 {
					if _, err := dutRequestAt(r, "SEND", DefaultWithin, i, wire.RCSendOnly); err != nil {
						return err
					}
				}
				_, err := sendPeer(r, peerResponder(r).ACK(r.DUTPSN(2)))
				return err
			}},
			Poll{Want: []WCWant{wcOK(1), wcOK(2), wcOK(3)}, Within: time.Second},
		},
		Break: inBreak("reads an ACK's PSN two lower", rocepeer.Opcodes(wire.RCAck), shiftPSN(-2)),
	}
}

func ghostACK() Case {
	return Case{
		ID: "9.7.5.2/ghost-ack", Section: "IBTA Vol 1 §9.7.5.2 (ghost acknowledge)", Transport: RoCE,
		Title: "an ACK for a PSN never sent is ignored: nothing completes, the QP stays RTS, the real ACK then works",
		Setup: Setup{Attr: reqAttrs(18, 7, 7)},
		Steps: []Step{
			Post{wrSend(1, 0, 64)},
			Func{Name: "ACK psn+5 (never sent)", F: func(r *Run) error {
				if _, err := dutRequestAt(r, "SEND", DefaultWithin, 0, wire.RCSendOnly); err != nil {
					return err
				}
				_, err := sendPeer(r, peerResponder(r).ACK(r.DUTPSN(5)))
				return err
			}},
			PollNone{For: 100 * time.Millisecond},
			QPState(verbs.QPSRTS),
			ackAt(0),
			Poll{Want: []WCWant{wcOK(1)}},
		},
		Break: inBreak("reads an ACK's PSN five lower", rocepeer.Opcodes(wire.RCAck), shiftPSN(-5)),
	}
}

func duplicateACK() Case {
	return Case{
		ID: "9.7.5.2/duplicate-ack", Section: "IBTA Vol 1 §9.7.5.2 (duplicate ACK)", Transport: RoCE,
		Title: "an ACK repeated is ignored: one completion per SEND, no retransmission",
		Setup: Setup{Attr: reqAttrs(18, 7, 7)},
		Steps: []Step{
			Post{wrSend(1, 0, 64), wrSend(2, 64, 64)},
			Func{Name: "ACK the first SEND", F: func(r *Run) error {
				for i := range 2 {
					if _, err := dutRequestAt(r, "SEND", DefaultWithin, i, wire.RCSendOnly); err != nil {
						return err
					}
				}
				_, err := sendPeer(r, peerResponder(r).ACK(r.DUTPSN(0)))
				return err
			}},
			Poll{Want: []WCWant{wcOK(1)}},
			ackAt(0),
			PollNone{For: 100 * time.Millisecond},
			ExpectNone{What: "a retransmission", For: 50 * time.Millisecond},
			ackAt(1),
			Poll{Want: []WCWant{wcOK(2)}},
		},
		Break: inBreak("reads an ACK's PSN one higher", rocepeer.Opcodes(wire.RCAck), shiftPSN(1)),
	}
}

// readOutOfOrder: READ responses that skip one (First, then Last) make the
// DUT discard the rest and ask again for what is missing: a READ request
// at the missing PSN for the remaining bytes, same R_Key (§9.7.5.2, the
// requester's READ response checks; §9.4.3: a retried READ names the rest
// of the range). The tester answers the retry by resuming the original
// response (Middle, Last), as rxe's and rnic's responders replay a
// sub-range.
func readOutOfOrder() Case {
	return Case{
		ID: "9.7.5.2/read-response-gap", Section: "IBTA Vol 1 §9.7.5.2, §9.4.3", Transport: RoCE,
		Title: "READ responses with a gap: the DUT asks again from the missing PSN for the rest of the range, then completes",
		Setup: Setup{Attr: reqAttrs(18, 7, 7)},
		Steps: []Step{
			Func{Name: "DUT posts a READ of three MTUs", F: func(r *Run) error {
				mtu := r.Attrs.PathMTU.Bytes()
				mr := r.MR(DefaultMR)
				if 3*mtu > int(mr.Len) {
					return fmt.Errorf("%w: a 3-MTU READ needs %d bytes", ErrNotApplicable, 3*mtu)
				}
				return r.Agent.PostSend(r.QP.H, agentproto.SendWR{ID: 1, Opcode: uint8(verbs.WRRDMARead),
					Flags: uint8(verbs.SendSignaled), RemoteAddr: peerVA, RKey: peerRKey,
					SGL: []agentproto.SGE{{Addr: mr.Addr, Len: uint32(3 * mtu), LKey: mr.LKey}}})
			}},
			Func{Name: "First and Last, no Middle; the READ again from the Middle", F: func(r *Run) error {
				mtu := r.Attrs.PathMTU.Bytes()
				if _, err := dutRequestAt(r, "READ", DefaultWithin, 0, wire.RCReadRequest); err != nil {
					return err
				}
				data := peerReadData(3 * mtu)
				ps := peerResponder(r).ReadResponses(r.DUTPSN(0), data, mtu)
				if _, err := sendPeer(r, ps[0], ps[2]); err != nil {
					return err
				}
				f, err := dutRequestAt(r, "READ for the rest", 500*time.Millisecond, 1, wire.RCReadRequest)
				if err != nil {
					return err
				}
				if got := f.H.RETH; got.VA != peerVA+uint64(mtu) || got.Length != uint32(2*mtu) || got.RKey != peerRKey {
					return fmt.Errorf("frame %d: RETH va %#x len %d rkey %#x, want va %#x len %d rkey %#x", f.No,
						got.VA, got.Length, got.RKey, peerVA+uint64(mtu), 2*mtu, peerRKey)
				}
				_, err = sendPeer(r, ps[1], ps[2])
				return err
			}},
			Poll{Want: []WCWant{wcOK(1)}},
			Func{Name: "the data in order", F: func(r *Run) error {
				mtu := r.Attrs.PathMTU.Bytes()
				return Memory{MR: DefaultMR, Want: peerReadData(3 * mtu)}.Do(r)
			}},
		},
		Break: &Break{Name: "never asks for a READ again", Fresh: OutFresh(func() FrameFault {
			return (&rocepeer.Once{Match: rocepeer.Opcodes(wire.RCReadRequest)}).Fault
		})},
	}
}

// credits: an ACK carrying a credit count limits the SENDs the DUT starts
// (IBTA §9.7.7.2: a requester honours end-to-end credits; with none left
// it may send one message to learn of new ones). rxe ignores credits.
func credits() Case {
	return Case{
		ID: "9.7.7.2/credits-honoured", Section: "IBTA Vol 1 §9.7.7.2", Transport: RoCE,
		Title: "with 0 credits the DUT sends one SEND and holds the next until an ACK grants a credit",
		Deviations: []Deviation{{Kind: "rxe", Ref: "cmd/internal/conform/README.md: rxe credits",
			Note: "rxe ignores the AETH credit count"}},
		Setup: Setup{Attr: reqAttrs(18, 7, 7)},
		Steps: []Step{
			Post{wrSend(1, 0, 64)},
			Func{Name: "ACK with MSN 1 and no credits", F: func(r *Run) error {
				if _, err := dutRequestAt(r, "SEND", DefaultWithin, 0, wire.RCSendOnly); err != nil {
					return err
				}
				resp := peerResponder(r)
				resp.Completed(1)
				resp.Credit = 0
				_, err := sendPeer(r, resp.ACK(r.DUTPSN(0)))
				return err
			}},
			Poll{Want: []WCWant{wcOK(1)}},
			Post{wrSend(2, 64, 64), wrSend(3, 128, 64)},
			Func{Name: "one SEND only (the limited one)", F: func(r *Run) error {
				_, err := dutRequestAt(r, "second SEND", DefaultWithin, 1, wire.RCSendOnly)
				return err
			}},
			ExpectNone{What: "the third SEND without a credit", For: 200 * time.Millisecond},
			Func{Name: "ACK with MSN 2 and one credit", F: func(r *Run) error {
				resp := peerResponder(r)
				resp.Completed(1)
				resp.Credit = 1
				_, err := sendPeer(r, resp.ACK(r.DUTPSN(1)))
				return err
			}},
			Func{Name: "now the third SEND", F: func(r *Run) error {
				_, err := dutRequestAt(r, "third SEND", DefaultWithin, 2, wire.RCSendOnly)
				return err
			}},
			Func{Name: "ACK", F: func(r *Run) error {
				resp := peerResponder(r)
				resp.Completed(1)
				_, err := sendPeer(r, resp.ACK(r.DUTPSN(2)))
				return err
			}},
			Poll{Want: []WCWant{wcOK(2), wcOK(3)}},
		},
		Break: inBreak("ignores credit counts", rocepeer.Opcodes(wire.RCAck),
			rocepeer.SetSyndrome(wire.ACKSyndrome(wire.CreditsUnlimited))),
	}
}

// fill is the DUT's outgoing data: a pattern written into DefaultMR.
func outData(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0x30 + i%47)
	}
	return b
}

func requestFormatCases() []Case {
	return []Case{sendSegments(), writeHeaders(), atomicHeaders()}
}

// sendSegments: a SEND of 2 MTU + 1 bytes leaves as First, Middle, Last
// with full MTU payloads, the pad on the Last only, SE only on the Last,
// consecutive PSNs, TVer 0 and the default P_Key (§9.2, §9.3, §9.7.2).
func sendSegments() Case {
	return Case{
		ID: "9.7.2/send-segments", Section: "IBTA Vol 1 §9.2, §9.7.2", Transport: RoCE,
		Title: "a SEND of 2 MTU + 1 bytes: First, Middle, Last; MTU payloads; pad and SE on the Last only",
		Setup: Setup{Attr: reqAttrs(18, 7, 7)},
		Steps: []Step{
			Func{Name: "DUT posts a solicited SEND of 2 MTU + 1 bytes", F: func(r *Run) error {
				n := 2*r.Attrs.PathMTU.Bytes() + 1
				mr := r.MR(DefaultMR)
				if n > int(mr.Len) {
					return fmt.Errorf("%w: needs %d bytes", ErrNotApplicable, n)
				}
				if err := r.Agent.WriteMR(mr.H, 0, outData(n)); err != nil {
					return err
				}
				return r.Agent.PostSend(r.QP.H, agentproto.SendWR{ID: 1, Opcode: uint8(verbs.WRSend),
					Flags: uint8(verbs.SendSignaled | verbs.SendSolicited),
					SGL:   []agentproto.SGE{{Addr: mr.Addr, Len: uint32(n), LKey: mr.LKey}}})
			}},
			Func{Name: "three packets", F: func(r *Run) error {
				mtu := r.Attrs.PathMTU.Bytes()
				data := outData(2*mtu + 1)
				ops := []wire.Opcode{wire.RCSendFirst, wire.RCSendMiddle, wire.RCSendLast}
				for i, op := range ops {
					f, err := dutRequestAt(r, op.String(), DefaultWithin, i, op)
					if err != nil {
						return err
					}
					if err := checkDUTSegment(&f, data[i*mtu:min((i+1)*mtu, len(data))], i == 2); err != nil {
						return err
					}
				}
				return nil
			}},
			ackMsgs(2, 1), // one SEND of three packets
			Poll{Want: []WCWant{wcOK(1)}},
		},
		Break: outBreak("sets SE on every packet", rocepeer.Opcodes(wire.RCSendFirst, wire.RCSendMiddle),
			func(f *wire.Frame) { f.Packet.Bytes()[1] |= 0x80 }),
	}
}

// checkSegment checks one packet of a message: payload, pad count and
// zero pad bytes, SE (last packet only), TVer 0, the default P_Key.
func checkDUTSegment(f *Frame, want []byte, last bool) error {
	p := &f.F.Packet
	switch {
	case string(p.Payload()) != string(want):
		return fmt.Errorf("frame %d: payload %s, want %s", f.No, short(p.Payload()), short(want))
	case f.H.BTH.PadCnt != wire.PadFor(len(want)):
		return fmt.Errorf("frame %d: PadCnt %d, want %d", f.No, f.H.BTH.PadCnt, wire.PadFor(len(want)))
	case string(p.PadBytes()) != string(make([]byte, len(p.PadBytes()))):
		return fmt.Errorf("frame %d: pad bytes % x, want zero", f.No, p.PadBytes())
	case f.H.BTH.SE != last:
		return fmt.Errorf("frame %d: SE %v, want %v (solicited event on the last packet only)", f.No, f.H.BTH.SE, last)
	case f.H.BTH.TVer != 0:
		return fmt.Errorf("frame %d: TVer %d, want 0", f.No, f.H.BTH.TVer)
	case f.H.BTH.PKey != wire.DefaultPKey:
		return fmt.Errorf("frame %d: P_Key %#04x, want %#04x (index 0)", f.No, f.H.BTH.PKey, wire.DefaultPKey)
	}
	return nil
}

// writeHeaders: an RDMA WRITE with immediate of 2 MTU carries the RETH
// (remote address, R_Key, the whole DMA length) on its First packet only
// and the ImmDt on its Last (§9.3.2, §9.4.1).
func writeHeaders() Case {
	const imm = 0xDEADBEEF
	return Case{
		ID: "9.4.1/write-reth-immdt", Section: "IBTA Vol 1 §9.3.2, §9.4.1", Transport: RoCE,
		Title: "an RDMA WRITE with immediate of 2 MTU: RETH with the whole length on the First, ImmDt on the Last",
		Setup: Setup{Attr: reqAttrs(18, 7, 7)},
		Steps: []Step{
			Func{Name: "DUT posts a WRITE with immediate of 2 MTU", F: func(r *Run) error {
				n := 2 * r.Attrs.PathMTU.Bytes()
				mr := r.MR(DefaultMR)
				if err := r.Agent.WriteMR(mr.H, 0, outData(n)); err != nil {
					return err
				}
				return r.Agent.PostSend(r.QP.H, agentproto.SendWR{ID: 1, Opcode: uint8(verbs.WRRDMAWriteWithImm),
					Flags: uint8(verbs.SendSignaled), RemoteAddr: peerVA + 0x40, RKey: peerRKey, Imm: imm,
					SGL: []agentproto.SGE{{Addr: mr.Addr, Len: uint32(n), LKey: mr.LKey}}})
			}},
			Func{Name: "First with RETH, Last with ImmDt", F: func(r *Run) error {
				mtu := r.Attrs.PathMTU.Bytes()
				data := outData(2 * mtu)
				f, err := dutRequestAt(r, "WRITE First", DefaultWithin, 0, wire.RCWriteFirst)
				if err != nil {
					return err
				}
				if got := f.H.RETH; got.VA != peerVA+0x40 || got.RKey != peerRKey || got.Length != uint32(2*mtu) {
					return fmt.Errorf("frame %d: RETH va %#x rkey %#x len %d, want va %#x rkey %#x len %d", f.No,
						got.VA, got.RKey, got.Length, peerVA+0x40, peerRKey, 2*mtu)
				}
				if err := checkDUTSegment(&f, data[:mtu], false); err != nil {
					return err
				}
				if f, err = dutRequestAt(r, "WRITE Last with Immediate", DefaultWithin, 1, wire.RCWriteLastImm); err != nil {
					return err
				}
				if f.H.Imm != imm {
					return fmt.Errorf("frame %d: ImmDt %#x, want %#x", f.No, f.H.Imm, uint32(imm))
				}
				return checkDUTSegment(&f, data[mtu:], false)
			}},
			ackMsgs(1, 1), // one WRITE of two packets
			Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is[uint64](1), Opcode: Is(verbs.WCRDMAWrite)}}},
		},
		Break: outBreak("counts the DMA length one short", rocepeer.Opcodes(wire.RCWriteFirst), func(f *wire.Frame) {
			reth := f.Packet.RETH()
			reth.Encode(&wire.RETHFields{VA: reth.VA(), RKey: reth.RKey(), Length: reth.DMALength() - 1})
		}),
	}
}

// atomicHeaders: a CmpSwap carries VA, R_Key, swap and compare in its
// AtomicETH (§9.3.3.2), and the original value from the atomic ACK lands
// in the DUT's local buffer.
func atomicHeaders() Case {
	const cmp, swap, orig = 0x0102030405060708, 0x1112131415161718, 0x0102030405060708
	return Case{
		ID: "9.4.5/atomic-eth", Section: "IBTA Vol 1 §9.3.3.2, §9.4.5", Transport: RoCE,
		Title: "a CmpSwap's AtomicETH carries VA, R_Key, swap and compare; the original value lands in the local buffer",
		Setup: Setup{Attr: reqAttrs(18, 7, 7)},
		Steps: []Step{
			Post{{ID: 1, Op: verbs.WRAtomicCmpSwp, Local: []Seg{{MR: DefaultMR, Off: 256, Len: 8}},
				Remote: peerVA + 0x18, RKey: peerRKey, CompareAdd: cmp, Swap: swap}},
			Func{Name: "the AtomicETH", F: func(r *Run) error {
				f, err := dutRequestAt(r, "CmpSwap", DefaultWithin, 0, wire.RCCmpSwap)
				if err != nil {
					return err
				}
				a := f.H.AtomicETH
				if a.VA != peerVA+0x18 || a.RKey != peerRKey || a.SwapAdd != swap || a.Compare != cmp {
					return fmt.Errorf("frame %d: AtomicETH va %#x rkey %#x swap %#x compare %#x, want %#x %#x %#x %#x",
						f.No, a.VA, a.RKey, a.SwapAdd, a.Compare, uint64(peerVA+0x18), peerRKey, uint64(swap), uint64(cmp))
				}
				_, err = sendPeer(r, peerResponder(r).AtomicAck(r.DUTPSN(0), orig))
				return err
			}},
			Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is[uint64](1), Opcode: Is(verbs.WCCompSwap)}}},
			Memory{MR: DefaultMR, Off: 256, Want: le64(orig)},
		},
		Break: outBreak("swaps the compare and swap operands", rocepeer.Opcodes(wire.RCCmpSwap), func(f *wire.Frame) {
			a := f.Packet.AtomicETH()
			v := a.Fields()
			v.SwapAdd, v.Compare = v.Compare, v.SwapAdd
			a.Encode(&v)
		}),
	}
}

func init() { Register(progressCases()...) }

// progressCases: forward progress restores the retry counters (IBTA
// §9.7.6.1.3, §9.7.6.1.4): an ACK that acknowledges new PSNs gives the
// next request its full retry_cnt and rnr_retry again.
func progressCases() []Case {
	return []Case{
		{
			ID: "9.7.6.1.3/retry-cnt-restored", Section: "IBTA Vol 1 §9.7.6.1.3", Transport: RoCE,
			Title: "retry_cnt 1: a retry used on one SEND, an ACK, and the next SEND still gets its retry",
			Setup: Setup{Attr: reqAttrs(14, 1, 7)},
			Steps: []Step{
				Post{wrSend(1, 0, 64)},
				Func{Name: "the first SEND twice, then its ACK", F: func(r *Run) error {
					if _, err := dutRequestAt(r, "SEND", DefaultWithin, 0, wire.RCSendOnly); err != nil {
						return err
					}
					w := rocepeer.AckTimeoutWindow(r.Attrs.Timeout)
					if _, err := dutRequestAt(r, "retransmission", w.Hi, 0, wire.RCSendOnly); err != nil {
						return err
					}
					_, err := sendPeer(r, peerResponder(r).ACK(r.DUTPSN(0)))
					return err
				}},
				Poll{Want: []WCWant{wcOK(1)}},
				Post{wrSend(2, 64, 64)},
				Func{Name: "the second SEND twice as well", F: func(r *Run) error {
					quiet := rocepeer.AckTimeoutWindow(r.Attrs.Timeout).Hi
					n, err := dutTransmissions(r, 1, 0, quiet, 4, nil)
					if err == nil && n != 2 {
						err = fmt.Errorf("%d transmissions of the second SEND, want 2 (retry_cnt 1, restored by the ACK)", n)
					}
					return err
				}},
				Poll{Want: []WCWant{wcFailed(2, verbs.WCRetryExcErr)}},
			},
			Break: repeatsBreak(),
		},
		{
			ID: "9.7.6.1.4/rnr-retry-restored", Section: "IBTA Vol 1 §9.7.6.1.4", Transport: RoCE,
			Title: "rnr_retry 1: an RNR NAK on one SEND, its ACK, and the next SEND may be RNR NAKed once as well",
			Setup: Setup{Attr: reqAttrs(18, 7, 1)},
			Steps: []Step{
				Post{wrSend(1, 0, 64)},
				rnrOnceThenACK(0),
				Poll{Want: []WCWant{wcOK(1)}},
				Post{wrSend(2, 64, 64)},
				rnrOnceThenACK(1),
				Poll{Want: []WCWant{wcOK(2)}},
			},
			Break: repeatsBreak(),
		},
	}
}

// rnrOnceThenACK RNR NAKs the DUT's request at rel once, takes the resend
// and acknowledges it.
func rnrOnceThenACK(rel int) Step {
	return Func{Name: "RNR NAK once, then ACK", F: func(r *Run) error {
		if _, err := dutRequestAt(r, "SEND", DefaultWithin, rel, wire.RCSendOnly); err != nil {
			return err
		}
		if _, err := sendPeer(r, peerResponder(r).RNRNAK(r.DUTPSN(rel), 1)); err != nil {
			return err
		}
		if _, err := dutRequestAt(r, "resent SEND", DefaultWithin, rel, wire.RCSendOnly); err != nil {
			return err
		}
		_, err := sendPeer(r, peerResponder(r).ACK(r.DUTPSN(rel)))
		return err
	}}
}
