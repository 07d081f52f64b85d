package wire

import (
	"encoding/binary"
	"hash/crc32"
)

// The MPA CRC, RFC 5044 §4.4: CRC-32C (Castagnoli, the iSCSI polynomial
// 0x1EDC6F41, reflected, initial value and final XOR all ones) over the whole
// FPDU as it is on the wire up to the CRC field: ULPDU_Length, ULPDU, pad and
// any markers that fall among them (markers.go).
//
// The CRC field is present in every FPDU; when neither side asked for CRCs
// (C=0 in both the MPA Request and Reply) the sender fills it with zero and
// the receiver ignores it (Linux siw does both).
//
// Byte order: the 32-bit CRC is written least significant byte first, as
// Linux siw does (put_unaligned_le32 of ~crc32c) and as Wireshark checks it
// (transport/tsharktest/README.md, "CRC rules"). Every FPDU of the siw
// -mpacrc captures verifies this way.

// CRCLen is the size of the CRC field that ends every FPDU.
const CRCLen = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC returns the CRC-32C of b.
func CRC(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// UpdateCRC extends crc (a value from CRC or UpdateCRC, 0 for none yet) with
// the bytes of b, for FPDUs that arrive or are built in pieces.
func UpdateCRC(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// GetCRC reads a wire CRC from the first four bytes of b.
func GetCRC(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// PutCRC writes c as a wire CRC into the first four bytes of b.
func PutCRC(b []byte, c uint32) { binary.LittleEndian.PutUint32(b, c) }
