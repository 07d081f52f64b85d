// Package rdmacm connects RC QPs the way librdmacm does over RoCEv2: the
// IB CM's REQ/REP/RTU on QP1 (roce/cm), with rdma_cm's 36-byte header in
// the REQ, its TCP port space service IDs (0x0000000001060000 | port) and
// its QP transitions. It interoperates with unmodified rping, perftest -R
// and any rdma_cm application on Linux rxe.
//
//	cm, _ := rdmacm.New(nic, rdmacm.Config{})    // attaches to the NIC's QP1
//	// server
//	l, _ := cm.Listen(7174)
//	req, _ := l.Accept(ctx)                      // a REQ arrived
//	conn, _ := req.Accept(ctx, qp, nil)          // REP; returns at the RTU
//	// or req.Reject(privateData)
//	// client
//	conn, _ := cm.Connect(ctx, qp, addr, 7174, privateData)
//	...
//	conn.Disconnect(ctx)                         // DREQ/DREP; QP to ERR
//
// The caller creates the QP (RC, in RESET, with its own PD and CQs); the CM
// takes it through INIT, RTR and RTS with the parameters of the REQ and REP
// (QPNs, PSNs, path MTU, retry counts, responder resources).
//
// An external QP, one the program moves itself (an rdma_cm id without a
// QP), connects by number: ConnectExternal returns at the REP with the
// QP's RTR and RTS attributes and sends the RTU on Response.Establish;
// Request.QPAttrs and AcceptExternal serve the passive side. The CM then
// never moves that QP.
package rdmacm
