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
// Creating verbs are Device methods (AllocPD, RegMR, AllocMW, CreateCQ,
// CreateSRQ, CreateQP, CreateAH); destroying ones are Device.DeallocPD,
// Device.DeregMR, Device.DeallocMW, and Destroy on the other objects. A
// window is bound by QP.BindMW (type 1) or a BIND_MW work request (type
// 2B), both executed by the engine in send-queue order (mw.go). Errors wrap the
// sentinels of nic/verbs (verbs.ErrInvalid, ...), which every backend
// shares; every limit Device.Query reports is enforced. AsIBV gives a
// Device to programs written against the verbs API, nic/ibv (ibv.go).
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
//   - Completions. CompletionQueue.Push returns false on overflow: the
//     completion is lost and the CQ raises IBV_EVENT_CQ_ERR (once per run
//     of lost completions) but takes the next one that finds room. As on
//     Linux rxe, the engine goes on after a lost send completion and moves
//     the QP to ERR after a lost receive completion. Call Solicited after
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
// # Layers
//
// rnic's packages form layers, bottom to top; the table below is the one
// list of which may import which, and cmd/rnic's TestLayers checks every
// import `go list ./...` reports against it (in the default build and
// with -tags verbs). A package belongs to the row
// whose pattern matches it most specifically: a path matches itself, and
// "p/..." matches p and every package below it (the longer p, the more
// specific). A test helper package (a name ending in "test", such as
// nic/ibv/ibvtest) belongs to the layer of the package it serves, its
// parent. A package matching no row fails the test, and so does an import
// no row allows. A layer may import itself and the layers it names, all of
// them below it; an "except" row allows the packages it names one more
// import, each for the reason given below; the "tests" row says what a
// package's tests may import besides.
//
//	layer      | packages                                | may import
//	vocabulary | memory nic/verbs nic/ibv                | -
//	model      | nic                                     | vocabulary
//	wire       | roce/wire roce/layers roce/cm/mad       | -
//	           | roce/decode iwarp/wire iwarp/decode     |
//	transports | transport transport/... tap             | wire
//	engines    | roce roce/cm roce/capcheck iwarp        | vocabulary wire transports
//	clients    | nic/rnicd/proto nic/rnicd/client        | vocabulary transports
//	           | nic/passthrough                         |
//	backends   | nic/embedded nic/tapnic nic/rdmacm      | vocabulary model wire transports engines
//	daemon     | nic/rnicd/... nic/view                  | vocabulary model transports clients backends
//	programs   | cmd/internal/...                        | vocabulary model backends
//	testtools  | cmd/internal/conform/...                | vocabulary model wire transports engines backends
//	binaries   | cmd/...                                 | vocabulary model wire transports engines clients
//	           |                                         | backends daemon programs testtools
//	except     | cmd/internal/perf                       | transport/clock/nap
//	except     | cmd/internal/demo                       | roce/wire iwarp/wire
//	except     | cmd/internal/ladder                     | wire transport transport/pcap
//	except     | cmd/internal/sim                        | transport transport/pcap transport/clock
//	           |                                         | transport/stream/...
//	except     | cmd/internal/scenario                   | transport transport/pcap transport/clock
//	           |                                         | transport/stream/...
//	except     | cmd/internal/tapraw                     | tap
//	tests      |                                         | vocabulary model wire transports engines
//	           |                                         | clients backends daemon
//
// The verbs API (nic/ibv) and its vocabulary (nic/verbs) sit below every
// implementation of them: the object model nic adapts itself to ibv
// (AsIBV), and the backends that are clients of a NIC elsewhere (rnicd's,
// over its protocol; the kernel's, through libibverbs) use the vocabulary
// alone, not the object model. Transports sit below the engines: roce and
// iwarp send through transport and keep time with transport/clock. The
// daemon's protocol polls its rings with transport/poll. nic/view, which
// shows rnicd's NICs to the programs rnic exec runs, sits with the daemon,
// whose client it uses.
//
// The programs run on the verbs API and the backends, whatever engine and
// transport a backend picks. The exceptions: the clock perf's memory watch
// sleeps on (nap), the wire formats the demo narrates frames with, the
// ladder diagrams (drawn from frames and captures), the simulator and the
// teaching scenarios (which build the simulated link, the simulated TCP
// network and their virtual clock), and tapraw (which
// measures the TAP device itself).
//
// Tests may also import any package of the layers from vocabulary to
// daemon: a lower layer's test may drive it through a higher one (ibv's
// examples open an embedded NIC; the wire tests read frames back with
// tshark through transport/tsharktest). No test outside cmd/ imports
// programs, test tools or binaries (Go's internal rule enforces that for
// cmd/internal).
//
// # Concurrency
//
// Every method is safe for concurrent use. CQ.Push and CQ.Poll, and the
// receive queues' Pop and Len, take one short mutex and never allocate.
package nic
