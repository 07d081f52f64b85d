// RoCEv2 UC and UD cases: the tester sends to the DUT's UC or UD QP
// (IBTA Vol 1 §9.8.2 UC, §9.8.3 UD, §10.2.4 Q_Keys, §11.4.1.1 the GRH a
// UD receive carries, Annex A17.4.5.1 for RoCEv2), and checks what the DUT
// sends on UD.

package conform

import (
	"bytes"
	"fmt"
	"time"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/cmd/internal/conform/rocepeer"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

func init() {
	Register(ucCases()...)
	Register(udCases()...)
}

// sender is the run's requester state towards the DUT's UC or UD QP.
func peerSender(r *Run) *rocepeer.Requester {
	if q, ok := r.Vars["peer.requester"].(*rocepeer.Requester); ok {
		return q
	}
	q := &rocepeer.Requester{DestQP: r.QP.QPN, PSN: r.PSN(0), SrcQP: r.TesterQPN, QKey: r.Attrs.QKey}
	r.Vars["peer.requester"] = q
	return q
}

func datagram(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i%53)
	}
	return b
}

// badRKeyXOR is how the UC case makes a bad R_Key: the Break undoes it.
const badRKeyXOR = 0x5A0000A5

func ucCases() []Case {
	return []Case{
		ucGap(),
		ucNoFirst(),
		ucWriteBadRKey(),
	}
}

func ucGap() Case {
	return Case{
		ID: "9.8.2/uc-gap", Section: "IBTA Vol 1 §9.8.2, §9.9.3.2", Transport: RoCE,
		Title: "UC: a SEND missing its middle packet is dropped, the next message is delivered",
		Setup: Setup{QPType: verbs.QPTypeUC, Recvs: 2, RecvLen: 4096},
		Steps: []Step{
			Func{Name: "First and Last of a 3-packet SEND, then a SEND Only", F: func(r *Run) error {
				mtu := r.Attrs.PathMTU.Bytes()
				if 3*mtu > 4096 {
					return fmt.Errorf("%w: path MTU %d", ErrNotApplicable, mtu)
				}
				q := peerSender(r)
				ps := q.UCSend(datagram(3*mtu, 1), mtu)
				_, err := sendPeer(r, ps[0], ps[2])
				if err == nil {
					_, err = sendPeer(r, q.UCSend(datagram(64, 7), mtu)...)
				}
				return err
			}},
			// Whether the dropped message's receive is reused (rnic,
			// rxe) or used up is the DUT's choice: the wr_id is not
			// checked.
			Poll{Want: []WCWant{{Status: verbs.WCSuccess, Opcode: Is(verbs.WCRecv), Len: Is[uint32](64)}}},
			Memory{MR: DefaultMR, Want: datagram(64, 7)},
			PollNone{For: 100 * time.Millisecond},
			QPState(verbs.QPSRTS),
		},
		Break: inBreak("ignores a PSN gap (reads the Last as the next packet)", rocepeer.Opcodes(wire.UCSendLast), shiftPSN(-1)),
	}
}

func ucNoFirst() Case {
	return Case{
		ID: "9.8.2/uc-no-first", Section: "IBTA Vol 1 §9.8.2, §9.9.3.2", Transport: RoCE,
		Title: "UC: a Middle and a Last whose First was lost are dropped; the next SEND Only is delivered",
		Setup: Setup{QPType: verbs.QPTypeUC, Recvs: 1, RecvLen: 4096},
		Steps: []Step{
			Func{Name: "Middle and Last of a 3-packet SEND, then a SEND Only", F: func(r *Run) error {
				mtu := r.Attrs.PathMTU.Bytes()
				if 3*mtu > 4096 {
					return fmt.Errorf("%w: path MTU %d", ErrNotApplicable, mtu)
				}
				q := peerSender(r)
				ps := q.UCSend(datagram(3*mtu, 1), mtu)
				_, err := sendPeer(r, ps[1], ps[2])
				if err == nil {
					_, err = sendPeer(r, q.UCSend(datagram(64, 7), mtu)...)
				}
				return err
			}},
			Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is[uint64](1), Opcode: Is(verbs.WCRecv), Len: Is[uint32](64)}}},
			Memory{MR: DefaultMR, Want: datagram(64, 7)},
			PollNone{For: 100 * time.Millisecond},
		},
		Break: inBreak("starts a message on a Middle", rocepeer.Opcodes(wire.UCSendMiddle), func(f *wire.Frame) {
			f.Packet.Bytes()[0] = byte(wire.UCSendFirst)
		}),
	}
}

func ucWriteBadRKey() Case {
	return Case{
		ID: "9.8.2/uc-write-bad-rkey", Section: "IBTA Vol 1 §9.8.2, §9.9.3.2 (class D: silently dropped)", Transport: RoCE,
		Title: "UC: an RDMA WRITE with a bad R_Key is dropped without a word, memory untouched, the QP stays RTS",
		Setup: Setup{QPType: verbs.QPTypeUC, Recvs: 1},
		Steps: []Step{
			Func{Name: "WRITE Only with a bad R_Key", F: func(r *Run) error {
				mr := r.MR(DefaultMR)
				_, err := sendPeer(r, peerSender(r).UCWrite(mr.Addr, mr.RKey^badRKeyXOR, datagram(64, 3), r.Attrs.PathMTU.Bytes())...)
				return err
			}},
			ExpectNone{What: "any answer to a UC request"},
			Memory{MR: DefaultMR, Want: make([]byte, 64)},
			QPState(verbs.QPSRTS),
			Func{Name: "WRITE Only with immediate and the right R_Key", F: func(r *Run) error {
				mr := r.MR(DefaultMR)
				q := peerSender(r)
				p := q.UCWrite(mr.Addr+128, mr.RKey, datagram(32, 9), r.Attrs.PathMTU.Bytes())[0]
				p.H.BTH.Opcode, p.H.Imm = wire.UCWriteOnlyImm, 0xC0FFEE
				_, err := sendPeer(r, p)
				return err
			}},
			Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is[uint64](1), Opcode: Is(verbs.WCRecvRDMAWithImm), Imm: Is[uint32](0xC0FFEE)}}},
			Memory{MR: DefaultMR, Off: 128, Want: datagram(32, 9)},
		},
		Break: &Break{Name: "takes a bad R_Key for a good one", In: rocepeer.Rewrite(rocepeer.Opcodes(wire.UCWriteOnly),
			func(f *wire.Frame) {
				reth := f.Packet.RETH()
				reth.Encode(&wire.RETHFields{VA: reth.VA(), RKey: reth.RKey() ^ badRKeyXOR, Length: reth.DMALength()})
			})},
	}
}

func udCases() []Case {
	return []Case{udQKeyViolation(), udPrivilegedQKey(), udSendFields(), udTooLong(), udOverMTU(), udGRH(), udWCFields()}
}

// udQKeyViolation: a datagram whose Q_Key is not the QP's is dropped
// silently; the next, with the right Q_Key, is delivered (§9.8.3, §10.2.4).
func udQKeyViolation() Case {
	const wrong = 0x00FF00FF
	return Case{
		ID: "10.2.4/ud-qkey-violation", Section: "IBTA Vol 1 §9.8.3, §10.2.4", Transport: RoCE,
		Title: "UD: a datagram with another Q_Key is dropped silently; the next with the QP's Q_Key is delivered",
		Setup: Setup{QPType: verbs.QPTypeUD, Recvs: 2},
		Steps: []Step{
			Func{Name: "SEND with a wrong Q_Key", F: func(r *Run) error {
				_, err := sendPeer(r, peerSender(r).UDSend(r.Attrs.QKey^wrong, datagram(32, 1)))
				return err
			}},
			PollNone{For: 150 * time.Millisecond},
			Func{Name: "SEND with immediate and the QP's Q_Key", F: func(r *Run) error {
				_, err := sendPeer(r, peerSender(r).UDSendImm(r.Attrs.QKey, datagram(32, 2), 0x5150))
				return err
			}},
			Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is[uint64](1), Imm: Is[uint32](0x5150)}}},
			Memory{MR: DefaultMR, Off: rocepeer.GRHLen, Want: datagram(32, 2)},
		},
		Break: &Break{Name: "does not check the Q_Key", In: rocepeer.Rewrite(rocepeer.Opcodes(wire.UDSendOnly),
			func(f *wire.Frame) {
				d := f.Packet.DETH()
				v := d.Fields()
				v.QKey ^= wrong
				d.Encode(&v)
			})},
	}
}

// udPost has the DUT post a UD SEND of n bytes of DefaultMR to the
// tester's QP with Q_Key qkey.
func udPost(r *Run, n int, qkey uint32) error {
	mr := r.MR(DefaultMR)
	if err := r.Agent.WriteMR(mr.H, 0, datagram(n, 0x41)); err != nil {
		return err
	}
	sgid, err := r.sgidIndex()
	if err != nil {
		return err
	}
	return r.Agent.PostSend(r.QP.H, agentproto.SendWR{ID: 1, Opcode: uint8(verbs.WRSend), Flags: uint8(verbs.SendSignaled),
		SGL:       []agentproto.SGE{{Addr: mr.Addr, Len: uint32(n), LKey: mr.LKey}},
		AH:        &agentproto.AV{DGID: r.Cfg.TesterAddr.String(), SGIDIndex: sgid, HopLimit: 64},
		RemoteQPN: r.TesterQPN, RemoteQKey: qkey})
}

// udDatagram takes the DUT's UD SEND and checks its DETH and payload.
func udDatagram(r *Run, qkey uint32, n int) error {
	f, err := dutRequest(r, "UD SEND", DefaultWithin)
	if err != nil {
		return err
	}
	d := f.H.DETH
	switch {
	case f.Op() != wire.UDSendOnly:
		return fmt.Errorf("frame %d: %v, want UD SEND Only", f.No, f.Op())
	case d.QKey != qkey:
		return fmt.Errorf("frame %d: DETH Q_Key %#x, want %#x", f.No, d.QKey, qkey)
	case d.SrcQP != r.QP.QPN:
		return fmt.Errorf("frame %d: DETH SrcQP %#x, want the DUT's QPN %#x", f.No, d.SrcQP, r.QP.QPN)
	}
	return checkDUTSegment(&f, datagram(n, 0x41), false)
}

func udPrivilegedQKey() Case {
	const controlled = 0x80000005
	return Case{
		ID: "10.2.4/ud-controlled-qkey", Section: "IBTA Vol 1 §10.2.4 (controlled Q_Keys)", Transport: RoCE,
		Title: "UD: a send WR whose Q_Key has the high bit set goes out with the QP's own Q_Key",
		Setup: Setup{QPType: verbs.QPTypeUD},
		Steps: []Step{
			Func{Name: "DUT posts a UD SEND with Q_Key 0x80000005", F: func(r *Run) error { return udPost(r, 48, controlled) }},
			Func{Name: "the datagram carries the QP's Q_Key", F: func(r *Run) error { return udDatagram(r, r.Attrs.QKey, 48) }},
			Poll{Want: []WCWant{wcOK(1)}},
		},
		Break: outBreak("sends the controlled Q_Key as given", rocepeer.Opcodes(wire.UDSendOnly), func(f *wire.Frame) {
			d := f.Packet.DETH()
			v := d.Fields()
			v.QKey = controlled
			d.Encode(&v)
		}),
	}
}

func udSendFields() Case {
	const qkey = 0x22222222
	return Case{
		ID: "9.8.3/ud-send-deth", Section: "IBTA Vol 1 §9.8.3, §9.3.4 (DETH)", Transport: RoCE,
		Title: "UD: the DUT's datagram is a SEND Only to the WR's QPN with the WR's Q_Key and its own QPN as SrcQP",
		Setup: Setup{QPType: verbs.QPTypeUD},
		Steps: []Step{
			Func{Name: "DUT posts a UD SEND of 61 bytes", F: func(r *Run) error { return udPost(r, 61, qkey) }},
			Func{Name: "BTH, DETH, payload and pad", F: func(r *Run) error { return udDatagram(r, qkey, 61) }},
			Poll{Want: []WCWant{wcOK(1)}},
		},
		Break: outBreak("puts another QPN in the DETH's SrcQP", rocepeer.Opcodes(wire.UDSendOnly), func(f *wire.Frame) {
			d := f.Packet.DETH()
			v := d.Fields()
			v.SrcQP ^= 0x10
			d.Encode(&v)
		}),
	}
}

// udTooLong: a datagram longer than the receive buffer (after the GRH
// area) is dropped; the QP stays RTS, the WQE stays posted and takes the
// next datagram (class D: a remote peer cannot take a UD QP down).
func udTooLong() Case {
	return Case{
		ID: "9.8.3/ud-too-long", Section: "IBTA Vol 1 §9.8.3, §11.4.1.1, §10.3.1", Transport: RoCE,
		Title: "UD: a datagram longer than the receive buffer is dropped; the QP stays RTS and the next one arrives",
		Setup: Setup{QPType: verbs.QPTypeUD, Recvs: 1, RecvLen: 256},
		Steps: []Step{
			Func{Name: "a 600-byte datagram into 256 bytes", F: func(r *Run) error {
				_, err := sendPeer(r, peerSender(r).UDSend(r.Attrs.QKey, datagram(600, 5)))
				return err
			}},
			PollNone{For: 150 * time.Millisecond},
			QPState(verbs.QPSRTS),
			Func{Name: "a 100-byte datagram", F: func(r *Run) error {
				_, err := sendPeer(r, peerSender(r).UDSend(r.Attrs.QKey, datagram(100, 6)))
				return err
			}},
			Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is[uint64](1), Len: Is[uint32](rocepeer.GRHLen + 100)}}},
			Memory{MR: DefaultMR, Off: rocepeer.GRHLen, Want: datagram(100, 6)},
			QPState(verbs.QPSRTS),
		},
		Break: &Break{Name: "truncates a long datagram instead of dropping it", In: rocepeer.CutUD(100)},
	}
}

// udOverMTU: a UD message is one packet of at most the path MTU (the
// port's active MTU for UD); a longer datagram is dropped even when the
// receive buffer would hold it, and the QP carries on (§9.8.3, class D).
func udOverMTU() Case {
	return Case{
		ID: "9.8.3/ud-over-mtu", Section: "IBTA Vol 1 §9.8.3, §9.6.1 (packet length)", Transport: RoCE,
		Title: "UD: a datagram longer than the MTU is dropped though the buffer would hold it; the next one arrives",
		Setup: Setup{QPType: verbs.QPTypeUD, MRs: []MR{{Name: DefaultMR, Len: 16384, Access: allRemote}}, Recvs: 1, RecvLen: 16384},
		Steps: []Step{
			Func{Name: "a datagram of MTU + 64 bytes", F: func(r *Run) error {
				n := r.Info.ActiveMTU + 64
				if n+rocepeer.GRHLen > 16384 {
					return fmt.Errorf("%w: active MTU %d", ErrNotApplicable, r.Info.ActiveMTU)
				}
				if _, err := sendPeer(r, peerSender(r).UDSend(r.Attrs.QKey, datagram(n, 5))); err != nil {
					return fmt.Errorf("%w: the tester's port cannot send %d bytes: %v", ErrNotApplicable, n, err)
				}
				return nil
			}},
			PollNone{For: 150 * time.Millisecond},
			QPState(verbs.QPSRTS),
			Func{Name: "a datagram of 100 bytes", F: func(r *Run) error {
				_, err := sendPeer(r, peerSender(r).UDSend(r.Attrs.QKey, datagram(100, 6)))
				return err
			}},
			Poll{Want: []WCWant{{Status: verbs.WCSuccess, ID: Is[uint64](1), Len: Is[uint32](rocepeer.GRHLen + 100)}}},
			Memory{MR: DefaultMR, Off: rocepeer.GRHLen, Want: datagram(100, 6)},
		},
		Break: &Break{Name: "truncates a datagram over the MTU instead of dropping it", In: rocepeer.CutUD(100)},
	}
}

// udGRH: the receive buffer starts with the 40-byte GRH area; over IPv4
// it holds 20 zero bytes and the datagram's IPv4 header (Annex A17.4.5.1).
func udGRH() Case {
	return Case{
		ID: "A17.4.5.1/ud-grh-ipv4", Section: "IBTA Vol 1 Annex A17.4.5.1, §11.4.1.1", Transport: RoCE,
		Title: "UD over IPv4: the receive buffer's first 40 bytes are 20 zero bytes and the datagram's IPv4 header",
		Setup: Setup{QPType: verbs.QPTypeUD, Recvs: 1},
		Steps: []Step{
			Func{Name: "a datagram; the GRH area against its IPv4 header", F: func(r *Run) error {
				if !r.DUTAddr.Unmap().Is4() {
					return fmt.Errorf("%w: the tester and the DUT speak IPv6 (the GRH is then the IPv6 header)", ErrNotApplicable)
				}
				p := peerSender(r).UDSend(r.Attrs.QKey, datagram(64, 8))
				e := r.Port.Encap(r.DUTAddr)
				b := wire.AppendFrame(nil, &e, &p.H, p.Payload)
				var f wire.Frame
				if err := f.Decode(b, e.DstPort); err != nil {
					return err
				}
				sent := append([]byte(nil), f.IP()...)
				no, err := r.Port.Send(b)
				if err != nil {
					return err
				}
				r.Note("#%d→%v", no, p.H.BTH.Opcode)
				if err := (Poll{Want: []WCWant{{Status: verbs.WCSuccess, Len: Is[uint32](rocepeer.GRHLen + 64),
					Flags: Is(verbs.WCFlagGRH)}}}).Do(r); err != nil {
					return err
				}
				got, err := r.Agent.ReadMR(r.MR(DefaultMR).H, 0, rocepeer.GRHLen+64)
				if err != nil {
					return err
				}
				if !bytes.Equal(got[rocepeer.GRHLen:], datagram(64, 8)) {
					return fmt.Errorf("payload after the GRH area: %s", short(got[rocepeer.GRHLen:]))
				}
				return rocepeer.CheckGRHv4(got, sent)
			}},
		},
		Break: &Break{Name: "reports another TTL in the GRH", In: rocepeer.SetTTL(3)},
	}
}

// udWCFields: a UD receive completion names the sender's QPN and carries
// the GRH flag, the immediate data and its flag (§11.4.2.1).
func udWCFields() Case {
	return Case{
		ID: "11.4.2.1/ud-wc-fields", Section: "IBTA Vol 1 §11.4.2.1, §9.8.3", Transport: RoCE,
		Title: "UD receive completion: opcode RECV, byte_len with the GRH, src_qp the sender's QPN, GRH and immediate flags",
		Setup: Setup{QPType: verbs.QPTypeUD, Recvs: 1},
		Steps: []Step{
			Func{Name: "SEND with immediate", F: func(r *Run) error {
				_, err := sendPeer(r, peerSender(r).UDSendImm(r.Attrs.QKey, datagram(20, 4), 0xABCD1234))
				return err
			}},
			Func{Name: "the completion", F: func(r *Run) error {
				wcs, err := r.Agent.PollCQ(r.CQ, 1, r.Bound(DefaultWithin))
				if err != nil {
					return err
				}
				if len(wcs) == 0 {
					return fmt.Errorf("no completion within %v", r.Bound(DefaultWithin))
				}
				wc := wcs[0]
				r.Note("wc %s src_qp %#x", wc.StatusName, wc.SrcQP)
				want := verbs.WCFlagGRH | verbs.WCFlagWithImm
				if verbs.WCStatus(wc.Status) != verbs.WCSuccess || verbs.WCOpcode(wc.Opcode) != verbs.WCRecv ||
					wc.ByteLen != rocepeer.GRHLen+20 || wc.SrcQP != r.TesterQPN || verbs.WCFlags(wc.Flags)&want != want ||
					wc.Imm != 0xABCD1234 {
					return fmt.Errorf("completion %s src_qp %#x, want SUCCESS RECV len %d src_qp %#x flags GRH|WITH_IMM imm 0xabcd1234",
						wcString(wc), wc.SrcQP, rocepeer.GRHLen+20, r.TesterQPN)
				}
				return nil
			}},
		},
		Break: &Break{Name: "reports another source QP", In: rocepeer.Rewrite(rocepeer.Opcodes(wire.UDSendOnlyImm),
			func(f *wire.Frame) {
				d := f.Packet.DETH()
				v := d.Fields()
				v.SrcQP ^= 0x40
				d.Encode(&v)
			})},
	}
}
