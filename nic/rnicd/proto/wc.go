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
const WCSlotLen = 48

// PutWC writes wc into slot (WCSlotLen bytes).
func PutWC(slot []byte, wc *verbs.WC) {
	_ = slot[WCSlotLen-1]
	le.PutUint64(slot[0:], wc.WRID)
	slot[8], slot[9], slot[10], slot[11] = byte(wc.Status), byte(wc.Opcode), byte(wc.Flags), wc.SL
	le.PutUint32(slot[12:], wc.VendorErr)
	le.PutUint32(slot[16:], wc.ByteLen)
	le.PutUint32(slot[20:], wc.Imm)
	le.PutUint32(slot[24:], wc.InvRKey)
	le.PutUint32(slot[28:], wc.QPN)
	le.PutUint32(slot[32:], wc.SrcQP)
	le.PutUint16(slot[36:], wc.PKeyIndex)
	le.PutUint16(slot[38:], 0)
	le.PutUint64(slot[40:], 0)
}

// GetWC reads the completion in slot into wc.
func GetWC(slot []byte, wc *verbs.WC) {
	_ = slot[WCSlotLen-1]
	*wc = verbs.WC{
		WRID:      le.Uint64(slot[0:]),
		Status:    verbs.WCStatus(slot[8]),
		Opcode:    verbs.WCOpcode(slot[9]),
		Flags:     verbs.WCFlags(slot[10]),
		VendorErr: le.Uint32(slot[12:]),
		ByteLen:   le.Uint32(slot[16:]),
		Imm:       le.Uint32(slot[20:]),
		InvRKey:   le.Uint32(slot[24:]),
		QPN:       le.Uint32(slot[28:]),
		SrcQP:     le.Uint32(slot[32:]),
		PKeyIndex: le.Uint16(slot[36:]),
		SL:        slot[11],
	}
}
