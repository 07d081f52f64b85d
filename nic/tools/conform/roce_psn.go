// RoCEv2 RC responder: PSN checks (IBTA Vol 1 §9.7.5.1.1, §9.7.5.1.4).

package conform

import (
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/roce/wire"
)

// pattern returns n bytes counting up from seed, to tell payloads apart.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i)
	}
	return b
}

// recvOK is a successful receive completion of n bytes.
func recvOK(n uint32) WCWant {
	return WCWant{Status: verbs.WCSuccess, Opcode: Is(verbs.WCRecv), Len: Is(n)}
}

func init() {
	Register(
		Case{
			ID: "C9-90/in-order", Section: "IBTA Vol 1 §9.7.5.1.1", Transport: RoCE,
			Title: "a SEND at the expected PSN is executed and ACKed with its PSN and MSN 1",
			Setup: Setup{Recvs: 1},
			Steps: []Step{
				Send{{Op: wire.RCSendOnly, PSN: 0, AckReq: true, Payload: pattern(40, 1)}},
				Expect{Want: []Check{IsOp(wire.RCAck), PSNIs(0), IsACK(), MSNIs(1)}},
				Poll{Want: []WCWant{recvOK(40)}},
				Memory{MR: DefaultMR, Want: pattern(40, 1)},
			},
			Break: &Break{Name: "ACKs carry the next PSN", Out: ShiftPSN(1, wire.RCAck)},
		},
	)
}
