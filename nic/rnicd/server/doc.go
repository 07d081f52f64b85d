// Package server is rnicd's side of the co-located verbs service: it serves
// ibv.Devices (the daemon's NICs, as nic.AsIBV wraps them) to client
// processes over a Unix SOCK_SEQPACKET socket, with the data plane in
// shared memory (package proto has the wire and the ring layouts). Every
// ring of a session is a slot of the session's ring arena (arena.go): a
// few memfd chunks, each sent and mapped once. A CQ's fired arm sets its
// slot in its completion channel's event set and sends a byte on the
// channel's one socket (channel.go, cqnotify.go). Every descriptor the
// daemon signals or is signalled on is its own end of a socketpair
// (wakeup.go): nothing a client does to the end it holds makes the daemon
// wait.
//
//	client process                          rnicd
//	  verbs call ── control message ──────▶ Session ── ibv.Device (nic)
//	  PostSend ──── WQE in SQ ring ─┐          drainer: copy slot, decode,
//	          session doorbell┴─────▶ bell loop → drainer: post to the ibv QP
//	  Poll ◀─────── WC in CQ ring ◀──────── mover: ibv CQ → ring,
//	  Notify ◀───── channel socket ◀───────        notify if armed
//	  DMA target ── memfd (SCM_RIGHTS) ───▶ mapped, RegMRIOVA at the
//	                                        client's own addresses
//
// The server validates nothing the NIC validates: it decodes a client's
// requests and WQEs into verbs types and calls its ibv objects, whose nic
// layer enforces every verbs rule. It trusts nothing from the client either:
// handles index per-connection tables (a client can never name another
// client's object), every length is bounded, every producer index a client
// publishes is checked against the daemon's own consumer index, and every
// ring slot is copied once before it is decoded. A client error in the
// data plane (a malformed WQE, a runaway index, a WQE the NIC refuses)
// moves the QP to ERR and raises QP_FATAL for that client; the daemon
// carries on.
//
// When a client's connection ends (exit, kill -9), its session is reaped:
// QPs are moved to ERR and destroyed (remote peers of an RC QP then see
// RETRY_EXC_ERR, as with a dead host), SRQs, CQs and AHs destroyed, MRs
// deregistered (the mapping of the client's memory goes once no DMA uses
// it), PDs freed; Stats counts it all.
//
// # Adding an op
//
// An op is a number in its concern's range (proto/op.go), bodies in proto
// (RegisterBodies, NameOp from an init func in a new file) and a Handler
// registered with Register from an init func in a new file here:
//
//	func init() { server.Register(proto.OpFoo, handleFoo) }
//
//	func handleFoo(s *Session, req *Request, rep *Reply) error {
//		var m proto.FooReq
//		if err := req.Decode(&m); err != nil {
//			return err
//		}
//		...
//		rep.Set(&proto.FooReply{...})
//		return nil
//	}
//
// A handler runs on its session's goroutine, one request at a time per
// client. State that must die with the session registers a cleanup with
// Session.OnClose; events go out with Session.SendEvent (their op in an
// event range, bodies registered in proto). On the client side a new file
// of package client calls the op with Device.call (descriptors go with the
// request and come back with the reply) and handles its events with
// registerEvent from an init func.
package server
