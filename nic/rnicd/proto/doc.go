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
// (memfds, eventfds) travel as SCM_RIGHTS with the message; the header
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
// The daemon creates every ring and both sides map it: before version 5 a
// sealed memfd per ring, sized by the daemon; from version 5 (the ring
// arena, arena.go) a slot of one of the session's ring chunks, 2 MiB
// memfds each mapped once per side and kept for the session, so creating
// or destroying a QP, SRQ or CQ maps and unmaps nothing. Producer and consumer indices are free-running uint32s on
// separate cache lines, accessed with sync/atomic; a slot is index & (slots
// − 1). Each side keeps its own copy of the index it owns and never reads
// it back from the shared page, so a peer scribbling on the header can
// confuse only itself. See ring.go for the layouts, wqe.go and wc.go for
// the slots.
//
// Descriptors are per session, not per QP: each side closes a ring's
// memfd once it has mapped it (from version 5 the daemon keeps one per
// 2 MiB chunk, for a client that missed it), and (from version 4) a client wakes the
// drainers of all its QPs and SRQs through one session doorbell, an
// eventfd and a bitmap that OPEN's reply carries (bell.go). A session of
// 10,000 QPs holds no more descriptors than one of a single QP (but for
// the daemon's one per ring chunk).
//
// # Versions
//
// A client announces its version in OPEN; the daemon serves every version
// from MinVersion to Version in the client's layout (messages.go): 2 adds
// the transport to OPEN's reply, 3 the connection parameters to
// CMRequestInfo, 4 the session doorbell (bell.go), 5 the ring arena
// (arena.go). 6 completion channels
// (chanevents.go: CREATE_CHANNEL, CREATE_CQ_ON; a CQ's events come
// through its slot of its channel's event set, with no eventfd of its
// own; CREATE_CQ is served as in version 5). Bodies whose layout depends on the session's version and
// do not carry it implement Versioned.
package proto
