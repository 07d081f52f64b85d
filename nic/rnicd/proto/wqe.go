// Work queue entries in the rings' slots. The client writes them; the
// daemon copies a slot once into memory of its own and decodes the copy,
// because the client may scribble on the slot meanwhile. A WQE that does
// not fit its slot is malformed; whether its fields make sense is nic's to
// judge when the daemon posts it.
//
// Send WQE (a slot of SendSlotSize bytes):
//
//	 0  wr_id        u64
//	 8  opcode u8, flags u8, num_sge u16
//	12  inline_len   u32  bytes of inline data in the payload (INLINE WRs)
//	16  imm          u32
//	20  inv_rkey     u32
//	24  remote_addr  u64
//	32  rkey         u32
//	36  ah           u32  address handle (UD), as the client's handle
//	40  compare_add  u64  FLUSH: its length
//	48  swap         u64  ATOMIC_WRITE: its value; FLUSH: placement type
//	                      in bits 7:0, selectivity in bits 15:8
//	56  remote_qpn   u32
//	60  remote_qkey  u32
//	64  payload: num_sge × SGE, or inline_len bytes of data
//
// FLUSH has no compare or swap operand, so its three fields ride in those
// two words rather than in a larger header.
//
// A BIND_MW WR (verbs.MWBind) has no SGEs and puts its fields in the
// others: the window's rkey in inv_rkey, the new rkey in rkey, the MR's
// lkey in imm, the range in remote_addr (address) and compare_add
// (length), the window's rights in swap.
//
// An INLINE WR carries its data (the client gathers it at post time, as
// verbs requires) and no SGEs. SGE (16 bytes): addr u64, length u32, lkey
// u32; addresses are the client's own (MRs are registered at them).
//
// Receive WQE:
//
//	 0  wr_id    u64
//	 8  num_sge  u32
//	12  reserved u32
//	16  num_sge × SGE

package proto

import (
	"encoding/binary"
	"fmt"

	"github.com/rnic/rnic/nic/verbs"
)

// WQE sizes.
//
//rnicd:cheader
const (
	SendWQEHeaderLen = 64
	RecvWQEHeaderLen = 16
	SGELen           = 16
)

// Send WQE fields: byte offsets in the slot (the table above).
//
//rnicd:cheader
const (
	sendWRID       = 0  // u64
	sendOpcode     = 8  // u8: verbs.WROpcode (ibv_wr_opcode's numbers)
	sendFlags      = 9  // u8: verbs.SendFlags (ibv_send_flags' bits)
	sendNumSGE     = 10 // u16
	sendInlineLen  = 12 // u32
	sendImm        = 16 // u32, host order of the wire value
	sendInvRKey    = 20 // u32
	sendRemoteAddr = 24 // u64
	sendRKey       = 32 // u32
	sendAH         = 36 // u32: the client's handle of the AH
	sendCompareAdd = 40 // u64
	sendSwap       = 48 // u64
	sendRemoteQPN  = 56 // u32
	sendRemoteQKey = 60 // u32
)

// Receive WQE and SGE fields: byte offsets in a receive slot and in an SGE.
//
//rnicd:cheader
const (
	recvWRID   = 0  // u64
	recvNumSGE = 8  // u32
	recvResvd  = 12 // u32, zero
	sgeAddr    = 0  // u64
	sgeLength  = 8  // u32
	sgeLKey    = 12 // u32
)

var le = binary.LittleEndian

// PutSendWQE writes wr into slot, with ah as its address handle. For an
// INLINE WR the caller has written inlineLen bytes of data at
// SendPayload(slot) and the SGEs are not written. It fails if the WR does
// not fit.
func PutSendWQE(slot []byte, wr *verbs.SendWR, ah uint32, inlineLen int) error {
	if len(slot) < SendWQEHeaderLen {
		return fmt.Errorf("%w: %d-byte send slot", ErrMalformed, len(slot))
	}
	room := len(slot) - SendWQEHeaderLen
	nsge := len(wr.SGL)
	inline := wr.Flags&verbs.SendInline != 0
	if inline {
		nsge = 0
		if inlineLen < 0 || inlineLen > room {
			return fmt.Errorf("%w: %d inline bytes in a slot of %d", ErrMalformed, inlineLen, room)
		}
	} else {
		inlineLen = 0
		if nsge > room/SGELen || nsge > 0xffff {
			return fmt.Errorf("%w: %d SGEs in a slot of %d bytes", ErrMalformed, nsge, room)
		}
	}
	if wr.Opcode == verbs.WRBindMW {
		wr = bindAsFields(wr)
	}
	le.PutUint64(slot[sendWRID:], wr.ID)
	slot[sendOpcode], slot[sendFlags] = byte(wr.Opcode), byte(wr.Flags)
	le.PutUint16(slot[sendNumSGE:], uint16(nsge))
	le.PutUint32(slot[sendInlineLen:], uint32(inlineLen))
	le.PutUint32(slot[sendImm:], wr.Imm)
	le.PutUint32(slot[sendInvRKey:], wr.InvRKey)
	le.PutUint64(slot[sendRemoteAddr:], wr.RemoteAddr)
	le.PutUint32(slot[sendRKey:], wr.RKey)
	le.PutUint32(slot[sendAH:], ah)
	compareAdd, swap := wr.CompareAdd, wr.Swap
	if wr.Opcode == verbs.WRFlush {
		compareAdd, swap = uint64(wr.FlushLen), uint64(wr.FlushType)|uint64(wr.FlushLevel)<<8
	}
	le.PutUint64(slot[sendCompareAdd:], compareAdd)
	le.PutUint64(slot[sendSwap:], swap)
	le.PutUint32(slot[sendRemoteQPN:], wr.RemoteQPN)
	le.PutUint32(slot[sendRemoteQKey:], wr.RemoteQKey)
	if !inline {
		putSGL(slot[SendWQEHeaderLen:], wr.SGL)
	}
	return nil
}

// bindAsFields returns a copy of a BIND_MW WR with its bind in the WQE's
// other fields (the table above).
func bindAsFields(wr *verbs.SendWR) *verbs.SendWR {
	c := *wr
	b := &wr.Bind
	c.InvRKey, c.RKey, c.Imm = b.Window, b.RKey, b.MR
	c.RemoteAddr, c.CompareAdd, c.Swap = b.Addr, b.Length, uint64(b.Access)
	return &c
}

// fieldsAsBind moves a decoded BIND_MW's fields back into its Bind. An
// access beyond 32 bits is kept as all ones, so that the bind fails.
func fieldsAsBind(wr *verbs.SendWR) {
	acc := verbs.Access(wr.Swap)
	if wr.Swap > 0xffffffff {
		acc = ^verbs.Access(0)
	}
	wr.Bind = verbs.MWBind{Window: wr.InvRKey, RKey: wr.RKey, MR: wr.Imm, Addr: wr.RemoteAddr, Length: wr.CompareAdd, Access: acc}
	wr.InvRKey, wr.RKey, wr.Imm, wr.RemoteAddr, wr.CompareAdd, wr.Swap = 0, 0, 0, 0, 0, 0
}

// SendPayload returns the payload area of a send slot, where inline data
// goes.
func SendPayload(slot []byte) []byte { return slot[SendWQEHeaderLen:] }

func putSGL(b []byte, sgl []verbs.SGE) {
	for i := range sgl {
		e := b[i*SGELen : i*SGELen+SGELen]
		le.PutUint64(e[sgeAddr:], sgl[i].Addr)
		le.PutUint32(e[sgeLength:], sgl[i].Length)
		le.PutUint32(e[sgeLKey:], sgl[i].LKey)
	}
}

func getSGL(b []byte, sgl []verbs.SGE) {
	for i := range sgl {
		e := b[i*SGELen : i*SGELen+SGELen]
		sgl[i] = verbs.SGE{Addr: le.Uint64(e[sgeAddr:]), Length: le.Uint32(e[sgeLength:]), LKey: le.Uint32(e[sgeLKey:])}
	}
}

// DecodeSendWQE decodes the send WQE in slot (the daemon's own copy) into
// wr, using sgl and inline (whose capacities bound the SGEs and inline
// bytes accepted) as wr's SGL and Inline storage. It returns the address
// handle; wr.AH is left nil for the caller to resolve. It allocates
// nothing and rejects a WQE that does not fit its slot or the buffers.
func DecodeSendWQE(slot []byte, wr *verbs.SendWR, sgl []verbs.SGE, inline []byte) (ah uint32, err error) {
	if len(slot) < SendWQEHeaderLen {
		return 0, fmt.Errorf("%w: %d-byte send slot", ErrMalformed, len(slot))
	}
	room := len(slot) - SendWQEHeaderLen
	nsge := int(le.Uint16(slot[sendNumSGE:]))
	inlineLen := le.Uint32(slot[sendInlineLen:])
	flags := verbs.SendFlags(slot[sendFlags])
	switch {
	case nsge > room/SGELen || nsge > cap(sgl):
		return 0, fmt.Errorf("%w: send WQE with %d SGEs", ErrMalformed, nsge)
	case uint64(inlineLen) > uint64(room) || uint64(inlineLen) > uint64(cap(inline)):
		return 0, fmt.Errorf("%w: send WQE with %d inline bytes", ErrMalformed, inlineLen)
	case flags&verbs.SendInline != 0 && nsge != 0:
		return 0, fmt.Errorf("%w: INLINE send WQE with SGEs (inline data is gathered by the client)", ErrMalformed)
	case flags&verbs.SendInline == 0 && inlineLen != 0:
		return 0, fmt.Errorf("%w: %d inline bytes without the INLINE flag", ErrMalformed, inlineLen)
	}
	*wr = verbs.SendWR{
		ID:         le.Uint64(slot[sendWRID:]),
		Opcode:     verbs.WROpcode(slot[sendOpcode]),
		Flags:      flags,
		Imm:        le.Uint32(slot[sendImm:]),
		InvRKey:    le.Uint32(slot[sendInvRKey:]),
		RemoteAddr: le.Uint64(slot[sendRemoteAddr:]),
		RKey:       le.Uint32(slot[sendRKey:]),
		CompareAdd: le.Uint64(slot[sendCompareAdd:]),
		Swap:       le.Uint64(slot[sendSwap:]),
		RemoteQPN:  le.Uint32(slot[sendRemoteQPN:]),
		RemoteQKey: le.Uint32(slot[sendRemoteQKey:]),
	}
	if wr.Opcode == verbs.WRFlush {
		if wr.CompareAdd > verbs.MaxMsgSize || wr.Swap > 0xffff {
			return 0, fmt.Errorf("%w: FLUSH WQE with length %#x, type and level %#x", ErrMalformed, wr.CompareAdd, wr.Swap)
		}
		wr.FlushLen, wr.FlushType, wr.FlushLevel = uint32(wr.CompareAdd), verbs.FlushType(wr.Swap), verbs.FlushLevel(wr.Swap>>8)
		wr.CompareAdd, wr.Swap = 0, 0
	}
	if wr.Opcode == verbs.WRBindMW {
		fieldsAsBind(wr)
	}
	if flags&verbs.SendInline != 0 {
		wr.Inline = inline[:inlineLen]
		copy(wr.Inline, slot[SendWQEHeaderLen:])
	} else {
		wr.SGL = sgl[:nsge]
		getSGL(slot[SendWQEHeaderLen:], wr.SGL)
	}
	return le.Uint32(slot[sendAH:]), nil
}

// PutRecvWQE writes wr into slot; it fails if the WR does not fit.
func PutRecvWQE(slot []byte, wr *verbs.RecvWR) error {
	if len(slot) < RecvWQEHeaderLen || len(wr.SGL) > (len(slot)-RecvWQEHeaderLen)/SGELen {
		return fmt.Errorf("%w: %d SGEs in a %d-byte receive slot", ErrMalformed, len(wr.SGL), len(slot))
	}
	le.PutUint64(slot[recvWRID:], wr.ID)
	le.PutUint32(slot[recvNumSGE:], uint32(len(wr.SGL)))
	le.PutUint32(slot[recvResvd:], 0)
	putSGL(slot[RecvWQEHeaderLen:], wr.SGL)
	return nil
}

// DecodeRecvWQE decodes the receive WQE in slot into wr, with sgl as its
// SGL storage. It allocates nothing.
func DecodeRecvWQE(slot []byte, wr *verbs.RecvWR, sgl []verbs.SGE) error {
	if len(slot) < RecvWQEHeaderLen {
		return fmt.Errorf("%w: %d-byte receive slot", ErrMalformed, len(slot))
	}
	n := le.Uint32(slot[recvNumSGE:])
	if uint64(n) > uint64((len(slot)-RecvWQEHeaderLen)/SGELen) || uint64(n) > uint64(cap(sgl)) {
		return fmt.Errorf("%w: receive WQE with %d SGEs", ErrMalformed, n)
	}
	wr.ID = le.Uint64(slot[recvWRID:])
	wr.SGL = sgl[:n]
	getSGL(slot[RecvWQEHeaderLen:], wr.SGL)
	return nil
}
