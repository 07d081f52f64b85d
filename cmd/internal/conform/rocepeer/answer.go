package rocepeer

import (
	"github.com/rnic/rnic/roce/wire"
)

// Packet is one transport packet to send: its headers and payload (the
// port adds the encapsulation and the ICRC).
type Packet struct {
	H       wire.Headers
	Payload []byte
}

// Responder is the state a tester keeps while it plays the RC responder of
// a DUT requester: whom it answers and the message sequence number its
// acknowledgements carry (IBTA Vol 1 §9.7.5.1.5: the MSN counts completed
// messages, READs when they execute, C9-148).
type Responder struct {
	// DestQP is the DUT's QPN, the destination of every answer.
	DestQP uint32
	// MSN is the MSN of the next acknowledgement.
	MSN uint32
	// Credit is the ACK credit code (wire.CreditsUnlimited: none
	// reported, as rxe).
	Credit uint8
	// PKey is the BTH P_Key (wire.DefaultPKey if zero).
	PKey uint16
}

func (r *Responder) bth(op wire.Opcode, psn uint32) wire.BTHFields {
	pk := r.PKey
	if pk == 0 {
		pk = wire.DefaultPKey
	}
	return wire.BTHFields{Opcode: op, PKey: pk, DestQP: r.DestQP, PSN: psn & wire.PSNMask}
}

// Completed counts n more messages completed at the responder: the MSN
// the next acknowledgement carries moves by n.
func (r *Responder) Completed(n int) { r.MSN = wire.PSNAdd(r.MSN, n) }

// ACK acknowledges every PSN up to and including psn with the current
// MSN and credit code.
func (r *Responder) ACK(psn uint32) Packet {
	h := wire.Headers{BTH: r.bth(wire.RCAck, psn)}
	h.AETH = wire.AETHFields{Syndrome: wire.ACKSyndrome(r.Credit), MSN: r.MSN}
	return Packet{H: h}
}

// NAK is a NAK with code c for psn (§9.7.5.2: for a PSN sequence error psn
// is the PSN the responder expects).
func (r *Responder) NAK(psn uint32, c wire.NAKCode) Packet {
	h := wire.Headers{BTH: r.bth(wire.RCAck, psn)}
	h.AETH = wire.AETHFields{Syndrome: wire.NAKSyndrome(c), MSN: r.MSN}
	return Packet{H: h}
}

// RNRNAK is a receiver-not-ready NAK for psn carrying RNR timer code
// timer (§9.7.5.2.8, Table 45).
func (r *Responder) RNRNAK(psn uint32, timer uint8) Packet {
	h := wire.Headers{BTH: r.bth(wire.RCAck, psn)}
	h.AETH = wire.AETHFields{Syndrome: wire.RNRNAKSyndrome(timer), MSN: r.MSN}
	return Packet{H: h}
}

// AtomicAck answers the atomic request at psn with the original remote
// data orig; it completes one message.
func (r *Responder) AtomicAck(psn uint32, orig uint64) Packet {
	r.Completed(1)
	h := wire.Headers{BTH: r.bth(wire.RCAtomicAck, psn), AtomicAck: orig}
	h.AETH = wire.AETHFields{Syndrome: wire.ACKSyndrome(r.Credit), MSN: r.MSN}
	return Packet{H: h}
}

// ReadResponses answers a READ request whose first response PSN is psn
// with data split at mtu: Only, or First, Middle..., Last (§9.7.5.1.4,
// the AETH on First, Last and Only). The READ completes one message when
// it executes, so the MSN moves before the first response.
func (r *Responder) ReadResponses(psn uint32, data []byte, mtu int) []Packet {
	r.Completed(1)
	n := max(1, (len(data)+mtu-1)/mtu)
	out := make([]Packet, 0, n)
	for k := range n {
		lo, hi := k*mtu, min((k+1)*mtu, len(data))
		op := wire.RCReadResponseMiddle
		switch {
		case n == 1:
			op = wire.RCReadResponseOnly
		case k == 0:
			op = wire.RCReadResponseFirst
		case k == n-1:
			op = wire.RCReadResponseLast
		}
		h := wire.Headers{BTH: r.bth(op, wire.PSNAdd(psn, k))}
		h.AETH = wire.AETHFields{Syndrome: wire.ACKSyndrome(r.Credit), MSN: r.MSN}
		out = append(out, Packet{H: h, Payload: data[lo:hi]})
	}
	return out
}

// ReadPackets returns how many response packets (PSNs) a READ of length
// bytes takes at mtu: at least one, even for a zero-length READ.
func ReadPackets(length, mtu int) int { return max(1, (length+mtu-1)/mtu) }
