// Package demo is `rnic demo`: two NICs connect RC and UD QPs and perform
// every basic operation — SEND, SEND with immediate, RDMA WRITE, WRITE with
// immediate, RDMA READ, CmpSwap, FetchAdd, a UD SEND — and one error (a bad
// rkey), explaining each step in words a student can follow: the QPNs and
// PSNs, every opcode on the wire, the ACKs, and the completions. Each step
// is checked; the demo fails if anything did not behave as the spec says.
package demo
