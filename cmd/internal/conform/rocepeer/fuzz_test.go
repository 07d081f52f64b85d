package rocepeer

import (
	"testing"

	"github.com/rnic/rnic/roce/wire"
)

// The bytes the peer reads come from the DUT (its receive buffer's GRH
// area, its frames): any of them gives an answer, never a panic.
func FuzzCheckGRHv4(f *testing.F) {
	f.Add(make([]byte, 40), make([]byte, 20))
	f.Add([]byte{1, 2, 3}, []byte{0x45})
	f.Fuzz(func(t *testing.T, grh, sent []byte) {
		CheckGRHv4(grh, sent)
	})
}

func FuzzFaults(f *testing.F) {
	q := Requester{DestQP: 5, SrcQP: 9}
	p := q.UDSend(0x11, []byte("hello"))
	f.Add(wire.AppendFrame(nil, &wire.Encap{}, &p.H, p.Payload))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, fault := range []func([]byte) []byte{SetTTL(3), CutUD(2), (&Repeats{}).Fault,
			(&Once{Match: Opcodes(wire.UDSendOnly)}).Fault, Rewrite(IsCM(0x10), EditCM(func(d []byte) { d[0]++ }))} {
			fault(append([]byte(nil), b...))
		}
	})
}
