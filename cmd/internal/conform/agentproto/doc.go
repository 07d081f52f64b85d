// Package agentproto is the protocol between `rnic conform run` (the
// tester) and `rnic conform agent` (the agent beside the device under
// test, DUT). The tester crafts and reads frames on its own raw port; the
// agent does what an application on the DUT would do, through the verbs
// API of any device rnic can open (ibv.Device).
//
// # Framing
//
// One TCP connection, newline-delimited JSON: every line is one object.
// The tester sends Requests, the agent answers each with exactly one
// Response carrying the request's id, in order. The first request must
// be "hello"; an agent refuses every other op before it (code "version").
//
//	→ {"id":1,"op":"hello","args":{"version":1,"tester":"rnic conform"}}
//	← {"id":1,"result":{"version":1,"agent":"rnic conform agent","device":"rnic0"}}
//	→ {"id":2,"op":"create_pd"}
//	← {"id":2,"result":{"h":1}}
//	→ {"id":3,"op":"poll_cq","args":{"cq":3,"max":1,"wait_ms":500}}
//	← {"id":3,"error":{"code":"verbs","message":"..."}}
//
// A line is at most MaxLine bytes. Unknown fields are ignored (newer
// testers may send more); an unknown op gets code "unknown_op".
//
// # Versions
//
// Version is 1. A hello with another version gets code "version" and the
// agent closes the connection; the tester says which version it speaks
// and which the agent does.
//
// # Objects and numbers
//
// Objects the agent creates are named by handles ("h"), small integers
// unique per connection; "reset" destroys every object of the connection
// (QPs first), as does closing the connection. Numbers are the
// libibverbs enum values: access flags IBV_ACCESS_* (local write 1,
// remote write 2, remote read 4, remote atomic 8, MW bind 16), QP types
// IBV_QPT_* (RC 2, UC 3, UD 4), QP states IBV_QPS_* (RESET 0 … ERR 6),
// send opcodes IBV_WR_* (WRITE 0, WRITE_WITH_IMM 1, SEND 2,
// SEND_WITH_IMM 3, READ 4, CMP_AND_SWP 5, FETCH_AND_ADD 6, LOCAL_INV 7,
// SEND_WITH_INV 9), send flags IBV_SEND_* (fence 1, signaled 2,
// solicited 4, inline 8), completion statuses IBV_WC_* and opcodes
// IBV_WC_* (completions also carry their names), path MTU in bytes.
// Byte strings (memory contents, private data) are base64, as
// encoding/json writes []byte.
//
// # Operations (op: args → result)
//
//	hello          Hello → HelloResult
//	device_info    – → DeviceInfo
//	create_pd      – → Handle
//	reg_mr         RegMR → MRInfo
//	dereg_mr       Handle → –
//	alloc_mw       AllocMW → MWInfo
//	dealloc_mw     Handle → –
//	attach_mcast   Mcast → –             (a UD QP joins a group)
//	detach_mcast   Mcast → –
//	create_cq      CreateCQ → Handle
//	create_qp      CreateQP → QPInfo
//	modify_qp      ModifyQP → –          (the fields present form the mask)
//	query_qp       Handle → QPAttr       (every field present)
//	destroy_qp     Handle → –
//	post_send      PostSend → –          (a BIND_MW WR carries its Bind)
//	post_recv      PostRecv → –
//	poll_cq        PollCQ → PollResult   (waits up to wait_ms for max)
//	read_mr        ReadMR → Data
//	write_mr       WriteMR → –
//	events         Wait → EventsResult  (async events since the last call)
//	counters       – → CountersResult
//	cm_listen      CMListen → CMListenResult
//	cm_accept      CMAccept → CMConnInfo
//	cm_connect     CMConnect → CMConnInfo
//	cm_disconnect  Handle → –
//	reset          – → –
//
// # Errors
//
// Error.Code is one of: "bad_request" (undecodable line or arguments),
// "unknown_op", "version", "no_object" (a handle this connection does
// not hold), "verbs" (the device refused the verb; Message is its error
// text, so a FAIL can quote it), "unsupported" (the device lacks the
// capability, e.g. no rdma_cm: a case becomes not-applicable),
// "timeout" (a cm wait ran out), "rejected" (cm_connect: the peer
// rejected the connection; Error.Reject carries the REJ's reason and
// private data when the device reports them). The connection stays usable
// after any error but "version".
//
// # Trust
//
// The agent accepts connections from one tester address only (loopback
// by default) and closes any other at once; it never opens a connection
// itself. It is a test tool: anyone who can reach it can make the DUT
// send and expose its registered memory.
package agentproto
