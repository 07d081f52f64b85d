// Package agent is `rnic conform agent`: it runs beside a device under
// test and executes the tester's steps (cmd/internal/conform/agentproto) on
// any ibv.Device — an rnic NIC in any mode, a NIC served by rnicd, or a
// libibverbs device (verbs:rxe0, verbs:siw0, verbs:mlx5_0) in a build
// with -tags verbs. It is a program of the verbs API: it never touches an
// engine.
//
// Files: server.go (listening, the tester-address check, sessions),
// session.go (one connection: handles and dispatch), verbs.go (the verbs
// operations), cm.go (rdma_cm), info.go (device_info), events.go (async
// events).
package agent
