package rocepeer

import (
	"github.com/rnic/rnic/roce/wire"
)

// Requests the tester sends to a UC or UD responder on the DUT.

// Requester is the tester's send side towards one DUT QP.
type Requester struct {
	// DestQP is the DUT's QPN.
	DestQP uint32
	// PSN is the PSN of the next packet.
	PSN uint32
	// PKey is the BTH P_Key (wire.DefaultPKey if zero).
	PKey uint16
	// SrcQP and QKey fill the DETH of UD packets.
	SrcQP uint32
	QKey  uint32
}

func (q *Requester) next(op wire.Opcode) wire.BTHFields {
	pk := q.PKey
	if pk == 0 {
		pk = wire.DefaultPKey
	}
	f := wire.BTHFields{Opcode: op, PKey: pk, DestQP: q.DestQP, PSN: q.PSN}
	q.PSN = wire.PSNAdd(q.PSN, 1)
	return f
}

// Skip leaves n PSNs unused, as if their packets were lost on the way.
func (q *Requester) Skip(n int) { q.PSN = wire.PSNAdd(q.PSN, n) }

// UCSend returns the packets of a UC SEND of data split at mtu.
func (q *Requester) UCSend(data []byte, mtu int) []Packet {
	ops := [4]wire.Opcode{wire.UCSendOnly, wire.UCSendFirst, wire.UCSendMiddle, wire.UCSendLast}
	return q.segments(ops, data, mtu, nil)
}

// UCWrite returns the packets of a UC RDMA WRITE of data to va/rkey.
func (q *Requester) UCWrite(va uint64, rkey uint32, data []byte, mtu int) []Packet {
	ops := [4]wire.Opcode{wire.UCWriteOnly, wire.UCWriteFirst, wire.UCWriteMiddle, wire.UCWriteLast}
	reth := &wire.RETHFields{VA: va, RKey: rkey, Length: uint32(len(data))}
	return q.segments(ops, data, mtu, reth)
}

// segments splits data into Only, or First, Middle..., Last packets with
// the given opcodes (in that order), the RETH on the first.
func (q *Requester) segments(ops [4]wire.Opcode, data []byte, mtu int, reth *wire.RETHFields) []Packet {
	n := max(1, (len(data)+mtu-1)/mtu)
	out := make([]Packet, 0, n)
	for k := range n {
		lo, hi := k*mtu, min((k+1)*mtu, len(data))
		op := ops[2]
		switch {
		case n == 1:
			op = ops[0]
		case k == 0:
			op = ops[1]
		case k == n-1:
			op = ops[3]
		}
		h := wire.Headers{BTH: q.next(op)}
		if k == 0 && reth != nil {
			h.RETH = *reth
		}
		out = append(out, Packet{H: h, Payload: data[lo:hi]})
	}
	return out
}

// UDSend returns a UD SEND Only carrying data, with the Q_Key given
// (not q.QKey: cases send wrong ones on purpose).
func (q *Requester) UDSend(qkey uint32, data []byte) Packet {
	h := wire.Headers{BTH: q.next(wire.UDSendOnly)}
	h.DETH = wire.DETHFields{QKey: qkey, SrcQP: q.SrcQP}
	return Packet{H: h, Payload: data}
}

// UDSendImm is UDSend with immediate data.
func (q *Requester) UDSendImm(qkey uint32, data []byte, imm uint32) Packet {
	h := wire.Headers{BTH: q.next(wire.UDSendOnlyImm), Imm: imm}
	h.DETH = wire.DETHFields{QKey: qkey, SrcQP: q.SrcQP}
	return Packet{H: h, Payload: data}
}
