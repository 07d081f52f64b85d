// Package proto is rnicd's wire: the control messages a client and the
// daemon exchange over a Unix SOCK_SEQPACKET socket, and the layouts of the
// shared-memory rings (send, receive and completion queues) that carry the
// data plane without a system call per operation.
//
// # Control plane
//
// Every message is one datagram of the socket (message boundaries are the
// socket's), at most MaxMessage bytes: a 16-byte header, then a body
// whose layout the op defines, little-endian throughout. File descriptors
// (memfds, sockets) travel as SCM_RIGHTS with the message; the header
// counts them so the receiver can tell a lost one from none.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-------------------------------+---------------+---------------+
//	|              op               |     kind      |     nfds      |
//	+-------------------------------+---------------+---------------+
//	|                              seq                              |
//	+---------------------------------------------------------------+
//	|                     status (replies; else 0)                  |
//	+---------------------------------------------------------------+
//	|                          body length                          |
//	+---------------------------------------------------------------+
//	|                         body ...                              |
//
// A request (KindRequest) is answered by one reply (KindReply) with the
// same seq; a notice (KindNotice) is a request that gets no reply. The
// daemon sends events (KindEvent) unsolicited. A reply whose status is not
// StatusOK has the error message as its body.
//
// Ops are numbered in ranges (see Op), one per concern, so that a new
// concern adds its ops in a new file without touching the others.
//
// # Who serves the socket
//
// A client checks the daemon's identity before it sends anything: right
// after connect(2) it reads SO_PEERCRED of its socket (getsockopt
// SOL_SOCKET, SO_PEERCRED: the credentials the listener had when it called
// listen(2)) and proceeds only if the uid is its own or 0 (root); otherwise
// it closes the socket and fails. A socket in a world-writable directory
// may be a squatter's, and the first messages carry the client's memory
// (memfds) and intentions. The check costs one system call per connection.
//
// The daemon bounds its clients: a connection beyond its total (rnicd
// --max-clients) or its uid's (--max-clients-per-uid) cap is accepted only
// to answer its first request with StatusLimit, the message naming the
// flag, and is then closed.
//
// # Data plane
//
// The daemon creates every ring and both sides map it: a slot of one of
// the session's ring chunks (the ring arena, arena.go), 2 MiB memfds each
// mapped once per side and kept for the session, so creating or
// destroying a QP, SRQ or CQ maps and unmaps nothing. Producer and
// consumer indices are free-running uint32s on
// separate cache lines, accessed with sync/atomic; a slot is index & (slots
// − 1). Each side keeps its own copy of the index it owns and never reads
// it back from the shared page, so a peer scribbling on the header can
// confuse only itself. See ring.go for the layouts, wqe.go and wc.go for
// the slots.
//
// Descriptors are per session, not per QP: each side closes a ring's
// memfd once it has mapped it (the daemon keeps one per 2 MiB chunk, for
// a client that missed it), and a client wakes the
// drainers of all its QPs and SRQs through one session doorbell, an
// socket and a bitmap that OPEN's reply carries (bell.go). Every socket
// the daemon signals or is signalled on is one end of a socketpair whose
// other end only the daemon holds (chanevents.go): no descriptor it
// shares with a client can make it wait. A session of
// 10,000 QPs holds no more descriptors than one of a single QP (but for
// the daemon's one per ring chunk).
//
// # One version
//
// A client announces Version in OPEN and the daemon refuses any other
// with StatusVersion, whose message names both versions (the C library
// prints it). rnicd, rnic and the drop-in libraries are built and
// installed together, so there is no compatibility path: a change of a
// body, a ring layout or a slot bumps Version.
//
// # The C side
//
// The drop-in libraries (nic/rnicd/dropin) speak this protocol in C. They
// take every number from one generated header,
// dropin/include/rnicd_proto.h: ops, statuses and kinds by name, and each
// const block marked //rnicd:cheader (sizes, the version, ring header
// offsets, WQE and completion slot fields, bell and arena geometry).
// go generate in this package writes it (internal/cheader); a test there
// fails while the checked-in header is stale. Bodies are written and read
// field by field in C as in Go (the codec in rn_codec.h); golden bodies
// written by the Go encoder (testdata/golden) are decoded by the Go tests
// and by a C test and fuzzers of the libraries.
//
// # Adding an op
//
//  1. Number it in its concern's range (op.go), in the file of its concern,
//     and name it with NameOp in that file's init.
//  2. Define its request and reply bodies (Encode and Decode reading every
//     field) and declare them with RegisterBodies: the fuzz target and the
//     round-trip tests then cover them.
//  3. Add a golden body (golden_test.go's table) and run
//     go test ./nic/rnicd/proto -run TestGolden -update.
//  4. Serve it: server.Register in nic/rnicd/server; call it from
//     nic/rnicd/client.
//  5. Run go generate ./nic/rnicd/proto: the op appears in rnicd_proto.h
//     named after its Go identifier (OpFooBar: RNICD_OP_FOO_BAR). A new
//     constant the C side needs goes in a const block marked
//     //rnicd:cheader.
//  6. In C, call it with rnic_call/ctx_call (libibverbs) or
//     rnic_private_cm_call (librdmacm), writing the body with the w_*/c_*
//     helpers in the order Encode writes it, and reading the reply with
//     r_*/d_* in Decode's order. If the library decodes its reply, check
//     the golden reply's fields in dropin/tests/golden/golden_verbs.c
//     (TestCGoldenAndFuzzers runs it; the fuzzers take every golden file).
//  7. Bump Version if an existing body or layout changed.
package proto

//go:generate go run ./internal/cheader -o ../dropin/include/rnicd_proto.h
