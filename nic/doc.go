// Package nic is rnic's verbs object model: a Device with one RoCE port and
// its GID table, protection domains, memory regions, completion queues,
// shared receive queues, address handles and queue pairs, with the rules of
// the IBTA verbs (as libibverbs and Linux rxe apply them) checked before
// anything reaches a transport engine. nic never parses packets; the
// engines (roce, iwarp) implement verbs.Engine and move the bytes.
//
// # Objects
//
//	dev, _ := nic.Open(nic.Config{GIDs: addrs, MAC: mac, MTU: 1500, Provider: stack})
//	pd, _ := dev.AllocPD()
//	mr, _ := dev.RegMR(pd, buf, memory.LocalWrite|memory.RemoteWrite)
//	cq, _ := dev.CreateCQ(256)
//	qp, _ := dev.CreateQP(pd, nic.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: caps})
//	qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, ...}, verbs.AttrState|...)
//	qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{Addr: mr.Addr(), Length: 4096, LKey: mr.LKey()}}})
//	n := cq.Poll(wcs)
//
// Creating verbs are Device methods (AllocPD, RegMR, CreateCQ, CreateSRQ,
// CreateQP, CreateAH); destroying ones are Device.DeallocPD,
// Device.DeregMR, and Destroy on the other objects. Errors wrap the
// sentinels in errors.go; every limit Device.Query reports is enforced.
//
// # Contract with the engines
//
// What an engine author must know about how nic drives it:
//
//   - Validation. Modify reaches the engine only for a transition valid for
//     the QP type and state, with exactly the required and allowed
//     attributes, each in range (qp_modify.go); the AV's DGID is in GID
//     form (IPv4-mapped for IPv4). PostSend reaches it only in RTS, SQD, SQE
//     or ERR, with an opcode valid for the QP type, SGE counts, inline size,
//     atomic operand and (UD) address handle checked (post.go).
//   - State. The engine owns the state: nic reads Engine.State for every
//     decision and passes the state it validated from to Engine.Modify,
//     which must fail if the QP has left it. An engine that moves a QP to
//     ERR must publish the new state (State returns ERR) before it flushes
//     the receive queue.
//   - Send queue depth. The engine enforces max_send_wr (QPConfig.Cap) and
//     returns verbs.ErrQueueFull from PostSend, because only it knows when
//     a WR retires (unsignaled WRs complete silently). In SQE and ERR,
//     PostSend completes the WR with WR_FLUSH_ERR.
//   - WR ownership. The *SendWR given to PostSend is nic's own copy (SGE
//     list and inline data included); the engine may keep it until the WR
//     retires. For an INLINE WR, SendWR.Inline holds the data gathered at
//     post time and is what must be sent: when the caller gave the bytes
//     directly (SendWR.Inline), SGL is nil; when nic gathered them, SGL is
//     a copy of the caller's list. Receive WQEs from RecvQueue.Pop are
//     likewise copies.
//   - Receive queues. nic enforces max_recv_wr and the SGE limits. After a
//     PostRecv on the QP's own queue nic calls Engine.RecvPosted once per
//     call. For an SRQ it calls RecvPosted on every attached QP only when
//     the SRQ goes from empty to non-empty: a responder can only be waiting
//     on an empty queue, and SRQ QPs advertise no credits. PostRecv in ERR
//     is flushed by nic (WR_FLUSH_ERR on the receive CQ), not by the engine.
//     Modify to RESET empties the QP's own receive queue (nic does it after
//     Engine.Modify succeeds); the engine resets its send side.
//   - Completions. CompletionQueue.Push returns false on overrun: the
//     completion is lost, the CQ raises IBV_EVENT_CQ_ERR once and stays in
//     error, and the engine must move the QP to ERR. Call Solicited after
//     pushing a receive completion whose message had the SE bit.
//   - Events. QPConfig.Event queues an async event and returns at once; it
//     never blocks and never calls back into the engine. Events reach the
//     application on Device.Events, and are dropped (and counted) if it does
//     not read them.
//   - Destroy. After Engine.Destroy nic posts nothing more, but a
//     RecvPosted racing with it (an SRQ post that took its snapshot of the
//     attached QPs just before) can still arrive: it must be harmless.
//   - Locks. nic never calls the engine while holding a CQ, RQ or SRQ lock,
//     so the engine may call Push, Pop, Len and Event while holding its own
//     lock; the engine must not call QP methods from its callbacks.
//   - UD path MTU. UD has no PATH_MTU attribute: use QPConfig.PortMTU.
//     A UD message longer than that is the engine's to handle (IBTA
//     C10-93.1.1 as rxe quotes it: send nothing, report no error).
//
// # Where nic stands among rnic's packages
//
// Bottom to top; each layer imports only layers below it:
//
//	model      memory, nic/verbs, nic (this package), nic/ibv (the API as interfaces)
//	wire       roce/wire, roce/layers, iwarp/wire, roce/cm/mad, roce/decode,
//	           iwarp/decode
//	engines    roce, roce/cm, iwarp (they implement verbs.Engine)
//	transports transport, transport/clock, transport/udp, transport/stream, tap
//	backends   nic/embedded, nic/tapnic, nic/rdmacm, nic/passthrough, nic/rnicd/client
//	server     nic/rnicd/proto, nic/rnicd/server, nic/rnicd/dropin (C drop-in libraries)
//	programs   cmd/internal/{perf,pingpong,rping,demo,sim,ladder}
//	binaries   cmd/rnic, cmd/rnicd, cmd/interop
//
// # Concurrency
//
// Every method is safe for concurrent use. CQ.Push and CQ.Poll, and the
// receive queues' Pop and Len, take one short mutex and never allocate.
package nic
