// Package perf is rnic's perftest: bandwidth and latency of RDMA WRITE,
// RDMA READ, SEND and atomics between two rnic NICs, reported in
// perftest's table (ib_write_bw, ib_read_lat, ...), next to the figure raw
// kernel UDP reaches between the same addresses in the same run.
//
// # Roles
//
// By default both sides run in one process: two NICs on 127.0.0.2 (the
// server) and 127.0.0.3 (the client) over loopback UDP, with the side
// channel on an ephemeral TCP port. As with perftest, they can also run in
// two processes: a server (Config.Serve) on its address and port 18515,
// and a client (Config.Server names the server). Either way the client
// drives: it sends the test's parameters, so a server needs no flags but
// its address (and Config.IWARP for an iWARP test).
//
// Over iWARP (Config.IWARP) the roles are the same, each side an iWARP
// NIC (embedded.OpenIWARP) on kernel TCP (in the TAP mode on the NICs' own
// TCP): the keys still travel on the side channel, and each QP pair
// connects through the NIC's connection manager (ibv.ConnManager: MPA
// Request and Reply) to the server's port 18516, which the server names
// on the side channel (iwarp_server.go draws the exchange).
//
// # Devices
//
// Every RoCEv2 test runs on ibv.Devices, whatever the backend, chosen by
// the device string (Config.IBDev, perftest's -d): a plain name is a NIC
// of this process (embedded or TAP mode, above); NAME@SOCKET (a NIC rnicd
// serves) and verbs:NAME (libibverbs) are opened with ibv.Open, and both
// sides of one process then share that device. Such a device gives the
// test's memory (Device.AllocBuffer), the NIC's address (its GID table)
// and the path MTU's bound (its port); the side channel goes through its
// ibv.Network if it has one, else kernel TCP, and rdma_cm mode through its
// ibv.ConnManager. iWARP runs on NICs of this process only.
//
// # Semantics (perftest's)
//
//   - bw: the client posts Iters operations per QP, keeping up to TxDepth
//     outstanding per QP and signalling one in CQMod; BW average is the
//     bytes over the time from the first post to the last completion, BW
//     peak the best rate over any run of consecutive operations, the
//     message rate in millions per second. MB is 2^20 bytes, as perftest's
//     MB/sec. All QPs of a side share one send CQ and one receive CQ, as
//     perftest's, so a depth left at the default shrinks when QPs × depth
//     would overflow max_cqe (10,000 QPs: 3 each); a depth given is kept
//     and checked. Unlike perftest, perf bounds the WRs in flight over all
//     QPs (Inflight, about 512 packets' worth, never below TxDepth): RoCE
//     relies on a lossless link; on a kernel socket the engine's budget
//     (--budget, roce/budget.go) keeps all QPs' unacknowledged packets
//     within what the receiving socket holds, and the bound does the same
//     for the WRs; the QPs take turns, and the result counts the QPs that
//     completed all their operations. For SEND the server keeps RxDepth receives posted; over UD
//     a depth left at the default posts every receive of the run up front
//     (up to 16000 per QP), as perftest does, since a datagram that finds
//     no receive is lost. A receiver that stalls names the NIC's loss
//     counters (rcv_no_buf, udp_rcvbuf_drops, ...).
//   - lat: one operation at a time. WRITE is a ping-pong of RDMA WRITEs,
//     each side polling the last byte of its buffer; SEND a ping-pong of
//     SENDs; READ and atomics wait for their own completion. A sample is
//     the time from one post to the next, halved for the ping-pongs;
//     t_typical is the median, t_99 and t_99.9 nearest-rank percentiles.
//     A side waits as spin.go says: on an in-process NIC parked on what
//     the NIC signals (the CQ's channel, the MR's watch); on rnicd's or a
//     libibverbs device busy-polling, as perftest does, for up to 2 ms at
//     a time (the waiting side keeps a core busy, yielding it to whoever
//     else wants it).
//   - Atomics: FETCH_AND_ADD adds 1, CMP_AND_SWAP swaps i for i+1 on its
//     i-th operation; either way the word ends at Iters, which the server
//     checks.
//
// Every run checks that the data moved: each side's source buffers hold a
// pattern naming the side and the QP, and the receiving side compares its
// buffers with the sender's pattern at the end (Result.Check).
//
// # The side channel
//
// Two processes speak perftest's side channel (perftest.go): versions,
// system data, MTU, the 108-byte key messages (Key, ParseKey), the hand
// shakes, the bw report exchange and "done", in perftest's order for each
// test, so either role runs against perftest's ib_write_bw, ib_read_lat,
// ... (RoCEv2 on rxe). Two rnic sides recognise each other by the version
// string and add rnic's steps (channel.go): the client's test parameters
// after the versions, and the data check, the raw baseline and the
// result before "done". Against perftest the data check and the raw
// baseline are skipped, and in a WRITE latency test the server writes
// first, as perftest's does. Over iWARP the exchange is rnic's own, with
// the same key messages.
//
// # Memory windows
//
// With Config.MW (--mw) each side, once its QPs are in RTS, binds a Type
// 2B window over each QP's memory and the two sides trade their keys a
// second time, so the peer's WRITEs, READs and atomics name a window's
// rkey, not the MR's (mw.go says why so). Between rnic's peers only, on
// any backend whose device has Type 2B windows: in the lab one side runs
// on rxe through libibverbs, so windows bound by either device are used
// by the other's requests on the wire.
//
// # rdma_cm mode
//
// With Config.RDMACM (perftest's -R) the side channel is no TCP
// connection: both sides connect through the connection manager (over
// RoCEv2 the device's rdma_cm, ibv.ConnManager: a local NIC gets
// nic/rdmacm on its QP1; over iWARP the iWARP CM) and perftest's
// messages travel as SENDs on a first, control connection (cm.go), on
// either transport, so either role runs against perftest -R on rxe and on
// siw (where perftest runs only so). Both sides then need the test's
// flags.
package perf
