// Package conform is `rnic conform run`: a protocol conformance tester
// that checks a device under test (DUT) against named spec rules, on the
// wire. The tester owns a raw port on the DUT's wire (FramePort: RoCEv2
// frames over its own UDP socket, a TAP device or a simulated link;
// IWARPPort: its own TCP connections for iWARP, iwport), crafts the frames a
// case needs, reads the DUT's, and drives the DUT's application side
// through the agent (cmd/internal/conform/agent, protocol in agentproto).
//
// # Writing a case (the stable API)
//
// A case is a Case value registered from an init function of the file
// that holds it (Register); IDs are unique, and every case has a Break:
//
//	func init() {
//		Register(Case{
//			ID: "C9-105/send", Section: "IBTA Vol 1 §9.7.5.1.4", Transport: RoCE,
//			Title: "a duplicate SEND is ACKed again, not executed again",
//			Setup: Setup{Recvs: 2},
//			Steps: []Step{
//				Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(8, 1)}},
//				Expect{Want: []Check{IsOp(wire.RCAck), PSNIs(0), IsACK(), MSNIs(1)}},
//				Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(8, 1)}},
//				Expect{Want: []Check{IsOp(wire.RCAck), PSNIs(0), IsACK(), MSNIs(1)}},
//				Poll{Want: []WCWant{recvOK(8)}},
//				PollNone{},
//			},
//			Break: &Break{Name: "duplicates are not ACKed", Out: ...},
//		})
//	}
//
// Setup prepares the DUT through the agent before the steps: a PD, one CQ
// (r.CQ, the QP's send and receive CQ), the MRs (DefaultMR, 4 KiB, every
// remote access, if none are named), a QP of Setup.QPType (RC) brought to
// RTS (or Setup.State; Setup.Reset leaves it in RESET) facing the tester's
// QP (Run.TesterQPN at Config.TesterAddr), with the attributes QPAttrs
// (Setup.Attr adjusts them) and Setup.Recvs receives posted. Setup.Custom
// replaces the bring-up (iWARP and rdma_cm cases connect through the CM).
// PSNs are chosen per case a few packets below the 24-bit wrap, so every
// case crosses it: write PSNs relative — Pkt.PSN and PSNIs(n) count from
// the DUT's first expected PSN (Run.PSN), DUTPSNIs(n) from the DUT's
// first request PSN (Run.DUTPSN).
//
// Steps run in order; the first error is the case's FAIL and its detail:
//
//	Send{pkts...}         crafted packets to the DUT's QP (Pkt: opcode,
//	                      PSN, flags, payload, RETH/Atomic/DETH/Imm/IETH
//	                      with keys and addresses of named MRs — RKeyOf,
//	                      AddrOf, BadRKey, Val32 —, Edit for header fields,
//	                      Raw for encoded bytes, BadICRC; responses to the
//	                      DUT's requests: Resp (PSN from the DUT's first),
//	                      AETH, AtomicAck)
//	Expect{Want: checks}  the DUT's next frame, within a bound, passing
//	                      every Check (IsOp, PSNIs, DUTPSNIs, IsACK, IsNAK,
//	                      IsRNRNAK, MSNIs, CreditsValid, PayloadIs,
//	                      PayloadLen, OrigIs, FrameFunc); it must also be
//	                      well formed (ICRC) and for the tester's QP
//	ExpectNone{Match}     no such frame for a while (class D silent drops)
//	Drain{For}            discard the DUT's frames for a while
//	Post{WRs}             the DUT posts send WRs (signaled)
//	PostRecv{}            the DUT posts a receive
//	Poll{Want}            the DUT's next completions (WCWant: status
//	                      always, opcode/len/imm/flags when Is(...) set)
//	PollNone{}            no completion for a while
//	QPState(s)            the DUT's QP is in state s
//	Event{Type}           an async event for the DUT's QP (QP_ACCESS_ERR...)
//	Memory{MR, Off, Want} the DUT's memory holds these bytes
//	WriteMem{...}         write the DUT's memory
//	SnapCounter{Name}, CounterRose{Name}  the DUT's counter grew in
//	                      between (not judged where it has no such one)
//	Sleep(d), Func{Name, F}
//
// Step is an interface: a case file may define steps of its own (a Func
// for one-offs). Run is what steps work with: the agent client, the
// port, the DUT's objects and attributes, Vars for values between steps,
// Note for the evidence line, Bound to scale a wait by Config.Slow,
// Cleanup for what must end with the case (a TCP stream).
//
// Frames a previous case's QP still had on the way never reach a step:
// each case's run plays another tester QPN, and frames for others are
// passed over. ExpectNone keeps the frames that do not match for the next
// Expect; Expect.Skip passes over frames a case does not care about.
//
// iWARP: Config.IWARP is the tester's iWARP port (its own TCP
// connections, iwport) and Main opens it; an iWARP case
// connects in Setup.Custom through the agent's cm_* operations and its
// steps read and write the stream.
//
// Verdicts: pass; FAIL; deviation-known (the case fails on a DUT whose
// DeviceInfo.Kind a Deviation names, with a note of the peer's documented
// behaviour); not-applicable (Case.Needs says why, a step wraps
// ErrNotApplicable, or the agent answers "unsupported"); could-not-run
// (the setup failed, the agent stopped answering, or a step's error is
// marked CannotRun: the DUT's reply did not parse); DUT-crashed (set by
// the lab harness, Result.MarkCrashed, which keeps the case's own verdict
// and the kernel's log in Result.Crash). A step may record a Finding
// (Run.Find): a departure met on the way to the case's own rule, named by
// its root cause, kept beside the verdict. The evidence is one line:
// frame numbers in the tester's capture (#n→ sent, #n← from the DUT)
// with what they carried, and the completions seen.
//
// # iWARP cases
//
// An iWARP case (Transport IWARP) has the Setup iwSetup(IWConn{...},
// access, recvs): one 4 KiB MR, receives of 256 bytes (wr_ids 1, 2, …),
// the QP brought to INIT, then a connection through the DUT's rdma_cm
// (the agent's cm_accept or cm_connect) with the tester's side done by
// hand on its own TCP connection (iwport.Port): by default the DUT
// listens and the tester sends an MPA Rev 2 Request with the RFC 6581
// words and C=1; IWConn.DUTConnects reverses the roles, IWConn.Manual
// leaves the MPA exchange to the steps. Steps of their own (IW, with the
// case's session: the port, both MPA frames, the tester's MSNs):
//
//	IWSend(name, mk, tx)       a crafted segment (any DDP/RDMAP header,
//	                           iwport.Tx{BadCRC} for a wrong CRC)
//	IWSendRaw(name, mk)        a ULPDU given as octets
//	ExpectFPDU(what, check)    the DUT's next FPDU, decoded (iwport.Frame)
//	ExpectTerminate(rule, codes...)  the DUT's Terminate: one of the codes,
//	                           with the offending headers rule demands
//	                           (HdrDDP, HdrDDPRDMA: RFC 5040 §4.8)
//	ExpectClosed, ExpectSilence, ExpectRefused, SendRequest,
//	CheckReply, CheckRequest   the stream's end, no FPDU, the MPA exchange
//
// and the common DUT steps (Post, PostRecv, Poll, QPState, Memory,
// WriteMem). Their Break is Break.Stream: a fresh iwport.Fault that sees
// the MPA frames and FPDUs the in-process iWARP DUT (SelfIWARP) sends and
// receives (iwarp_breaks.go: editMPA, editFPDU, dropFPDU, termCode,
// termNoHeaders, dropTerminate). Config.IWARP is the tester's address
// and capture; iwarp_*.go are the iWARP cases.
//
// # The self-test
//
// SelfDUT is an in-process rnic DUT (embedded mode on a loopback address)
// with its agent and a tester port beside it. Its link is a FaultLink: a
// case's Break rewrites or drops the frames the DUT sends (Out) or
// receives (In: a DUT that skipped a check), or Apply sets anything else
// on the DUT. The package test runs every case plain (must pass) and
// broken (must FAIL, in a step, not the setup). Faults in faults.go:
// DropOps, EditOut, RewriteAETH, RewriteNAK, ShiftPSN on what the DUT
// sends; EditIn, ResealIn, SetInPSN on what it receives (a DUT that skips
// a check or takes a duplicate for a new request); Nth picks one frame of
// an opcode, Drop drops it. Faults with state (Nth) go in Break.Fresh
// (OutFresh, InFresh) so that each broken run starts afresh.
//
// Files: case.go (Case, Setup, Break, registry), steps.go, checks.go,
// pkt.go (crafting frames), port.go (FramePort), iwarp.go (IWARPPort), setup.go
// (the DUT's bring-up), run.go (Run, verdicts), report.go (text, JSON,
// JUnit), selfdut.go (and faultlink_groups.go, its link in multicast),
// faults.go; roce_*.go are the RoCEv2 cases (roce_mcast.go multicast UD);
// iwarp.go, iwarp_steps.go, iwarp_breaks.go, selfdut_iwarp.go and the
// iwarp_*.go cases the iWARP side.
//
// Where the DUT is the requester, the tester plays its responder:
// cases_rcreq.go (ACK timer and retry counters, RNR, NAKs, implied
// ACK/NAK, ghost and duplicate ACKs, credits, request headers) answers
// with packets from cmd/internal/conform/rocepeer or stays silent, and times
// retransmissions against rocepeer's windows (timing.go: never before the
// nominal time, at most 4× it plus a scheduling allowance); the port's
// time is the link's (PortConfig.Clock: the virtual clock on a simulated
// link). cases_ucud.go has the UC and UD cases, cases_cm.go rdma_cm on
// QP1 (the agent's cm_* calls run in the background while the tester
// answers on the wire); peer.go their helpers.
package conform
