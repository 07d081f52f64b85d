// Package demo is `rnic demo`: two NICs connect RC and UD QPs and perform
// every basic operation — SEND, SEND with immediate, RDMA WRITE, WRITE with
// immediate, RDMA READ, CmpSwap, FetchAdd, a UD SEND — and one error (a bad
// rkey), explaining each step in words a student can follow: the QPNs and
// PSNs, every opcode on the wire, the ACKs, and the completions. Each step
// is checked; the demo fails if anything did not behave as the spec says.
//
// The RoCEv2 steps run on ibv.Devices: two NICs of this process (over a
// link, loopback UDP or TAPs), or both sides on one Config.Device, any
// backend's, whose QPs then talk to each other through its port.
package demo
