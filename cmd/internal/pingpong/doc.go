// Package pingpong is rnic's ibv_rc_pingpong (rdma-core's
// libibverbs/examples/rc_pingpong.c): two processes, or two goroutines,
// each with an RC QP on an rnic NIC, bounce a SEND of a given size back and
// forth and report the throughput and the time per round trip in the real
// tool's exact words.
//
// The side channel is rc_pingpong's own, byte for byte: a TCP connection on
// port 18515 over which the client writes its 52-byte address message
// "LID:QPN:PSN:GID", the server reads it, connects its QP and answers with
// its own, and the client connects and writes "done". Dest and its codec
// are that message; ClientExchange and ServerExchange are the two halves of
// the exchange.
//
// # Addresses in the embedded mode
//
// Each side's NIC owns an IP address of the host and the RoCEv2 UDP port
// on it (transport/udp). The server's side channel listens on its NIC's
// address. Without Config.Addr, a server takes 127.0.0.2 and a client of a
// loopback server takes 127.0.0.3 (127.0.0.2 if the server is 127.0.0.3),
// so "rnic pingpong" and "rnic pingpong 127.0.0.2" in two terminals just
// work; a client of a remote server takes the address the host routes to
// it from.
//
// # Devices
//
// A side runs on an ibv.Device, whatever the backend, chosen by its
// device string (Config.IBDev, rc_pingpong's -d): a plain name is a NIC of
// this process, built in the embedded or the TAP mode; NAME@SOCKET (a NIC
// rnicd serves) and verbs:NAME (libibverbs) are opened with ibv.Open. The
// buffer comes from Device.AllocBuffer, the NIC's address from the
// device's GID table, and the side channel goes through the device's
// ibv.Network if it has one (a TAP NIC's own TCP), else kernel TCP.
//
// # Differences from ibv_rc_pingpong
//
//   - RoCEv2 always needs a GID; without -g rc_pingpong sends none and routes
//     by LID, which only InfiniBand has. rnic then addresses the peer by
//     the IP its side channel connection came from (the client binds its
//     end to its NIC address so that this is the peer's NIC address).
//   - With --chk both sides check every message they receive against the
//     pattern the client sends, and a mismatch fails the run (rc_pingpong
//     checks the last message on the server and only prints).
//   - A client retries a refused connection for a moment, so a client
//     started together with its server finds it.
//   - The side channel stays open during the run: a side that has finished
//     half-closes it and waits for the peer to close its end before it
//     tears its QP down, so that its NIC has acknowledged the peer's last
//     message (rc_pingpong closes it after the exchange; the bytes are the
//     same, and against a real rc_pingpong the wait ends at once).
package pingpong
