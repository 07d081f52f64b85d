// Work completions in a completion ring's slots, written by the daemon and
// read by the client (struct ibv_wc, the fields verbs.WC has):
//
//	 0  wr_id       u64
//	 8  status u8, opcode u8, flags u8, sl u8
//	12  vendor_err  u32
//	16  byte_len    u32
//	20  imm         u32
//	24  inv_rkey    u32
//	28  qpn         u32
//	32  src_qp      u32
//	36  pkey_index  u16, reserved u16
//	40  reserved    u64

package proto

import "github.com/rnic/rnic/nic/verbs"

// WCSlotLen is the size of a completion slot.
//
//rnicd:cheader
const WCSlotLen = 48

// Completion slot fields: byte offsets in the slot (the table above).
//
//rnicd:cheader
const (
	wcWRID      = 0  // u64
	wcStatus    = 8  // u8: verbs.WCStatus (ibv_wc_status's numbers)
	wcOpcode    = 9  // u8: verbs.WCOpcode (ibv_wc_opcode's numbers)
	wcFlags     = 10 // u8: verbs.WCFlags (ibv_wc_flags' bits)
	wcSL        = 11 // u8
	wcVendorErr = 12 // u32
	wcByteLen   = 16 // u32
	wcImm       = 20 // u32, host order of the wire value
	wcInvRKey   = 24 // u32
	wcQPN       = 28 // u32
	wcSrcQP     = 32 // u32
	wcPKeyIndex = 36 // u16
	wcResvd16   = 38 // u16, zero
	wcResvd64   = 40 // u64, zero
)

// PutWC writes wc into slot (WCSlotLen bytes).
func PutWC(slot []byte, wc *verbs.WC) {
	_ = slot[WCSlotLen-1]
	le.PutUint64(slot[wcWRID:], wc.WRID)
	slot[wcStatus], slot[wcOpcode], slot[wcFlags], slot[wcSL] = byte(wc.Status), byte(wc.Opcode), byte(wc.Flags), wc.SL
	le.PutUint32(slot[wcVendorErr:], wc.VendorErr)
	le.PutUint32(slot[wcByteLen:], wc.ByteLen)
	le.PutUint32(slot[wcImm:], wc.Imm)
	le.PutUint32(slot[wcInvRKey:], wc.InvRKey)
	le.PutUint32(slot[wcQPN:], wc.QPN)
	le.PutUint32(slot[wcSrcQP:], wc.SrcQP)
	le.PutUint16(slot[wcPKeyIndex:], wc.PKeyIndex)
	le.PutUint16(slot[wcResvd16:], 0)
	le.PutUint64(slot[wcResvd64:], 0)
}

// GetWC reads the completion in slot into wc.
func GetWC(slot []byte, wc *verbs.WC) {
	_ = slot[WCSlotLen-1]
	*wc = verbs.WC{
		WRID:      le.Uint64(slot[wcWRID:]),
		Status:    verbs.WCStatus(slot[wcStatus]),
		Opcode:    verbs.WCOpcode(slot[wcOpcode]),
		Flags:     verbs.WCFlags(slot[wcFlags]),
		VendorErr: le.Uint32(slot[wcVendorErr:]),
		ByteLen:   le.Uint32(slot[wcByteLen:]),
		Imm:       le.Uint32(slot[wcImm:]),
		InvRKey:   le.Uint32(slot[wcInvRKey:]),
		QPN:       le.Uint32(slot[wcQPN:]),
		SrcQP:     le.Uint32(slot[wcSrcQP:]),
		PKeyIndex: le.Uint16(slot[wcPKeyIndex:]),
		SL:        slot[wcSL],
	}
}
