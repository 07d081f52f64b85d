package wire

import (
	"encoding/binary"
	"time"
)

// AETH is a view of the ACK Extended Transport Header, IBTA Vol 1 §9.3.5
// (syndrome encoding in §9.7.5.2, Table 43-45).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|0|Typ|  Value  |              Message Sequence Number          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Typ: 00 ACK (Value = credit code), 01 RNR NAK (Value = RNR timer code),
// 10 reserved, 11 NAK (Value = NAK code).
type AETH []byte

// AETHLen is the size of an AETH.
const AETHLen = 4

func (a AETH) Syndrome() Syndrome            { return Syndrome(a[0]) }
func (a AETH) MSN() uint32                   { return be24(a[1:]) }
func (a AETH) Encode(s Syndrome, msn uint32) { a[0] = byte(s); put24(a[1:], msn) }

// Word returns the whole 32-bit AETH.
func (a AETH) Word() uint32 { return binary.BigEndian.Uint32(a) }

// Syndrome is the first byte of an AETH.
type Syndrome uint8

// AckType is the kind of acknowledgement a syndrome carries.
type AckType uint8

// Syndrome types.
const (
	AckTypeACK      AckType = 0
	AckTypeRNRNAK   AckType = 1
	AckTypeReserved AckType = 2
	AckTypeNAK      AckType = 3
)

// NAKCode is the value of a NAK syndrome (IBTA Vol 1 Table 45).
type NAKCode uint8

// NAK codes.
const (
	NAKPSNSeqError    NAKCode = 0
	NAKInvalidRequest NAKCode = 1
	NAKRemoteAccess   NAKCode = 2
	NAKRemoteOpError  NAKCode = 3
	NAKInvalidRDReq   NAKCode = 4
)

func (c NAKCode) String() string {
	switch c {
	case NAKPSNSeqError:
		return "PSN sequence error"
	case NAKInvalidRequest:
		return "invalid request"
	case NAKRemoteAccess:
		return "remote access error"
	case NAKRemoteOpError:
		return "remote operational error"
	case NAKInvalidRDReq:
		return "invalid RD request"
	}
	return "reserved NAK code"
}

// CreditsUnlimited is the ACK credit code meaning "invalid credit count":
// the responder does not report credits (what rxe always sends).
const CreditsUnlimited = 0x1F

// Type returns the syndrome's type.
func (s Syndrome) Type() AckType { return AckType(s>>5) & 3 }

// Value returns the 5-bit value field.
func (s Syndrome) Value() uint8 { return uint8(s) & 0x1F }

// Reserved reports whether bit 7, which must be zero, is set.
func (s Syndrome) Reserved() bool { return s&0x80 != 0 }

// ACKSyndrome builds an ACK syndrome with a credit code (0..31).
func ACKSyndrome(creditCode uint8) Syndrome { return Syndrome(creditCode & 0x1F) }

// RNRNAKSyndrome builds an RNR NAK syndrome carrying an RNR timer code.
func RNRNAKSyndrome(timerCode uint8) Syndrome { return Syndrome(0x20 | timerCode&0x1F) }

// NAKSyndrome builds a NAK syndrome.
func NAKSyndrome(c NAKCode) Syndrome { return Syndrome(0x60 | uint8(c)&0x1F) }

// NAK returns the NAK code of a NAK syndrome.
func (s Syndrome) NAK() NAKCode { return NAKCode(s.Value()) }

// creditTable maps ACK credit codes 0..30 to the number of receive WQEs the
// responder has available (IBTA Vol 1 Table 44).
var creditTable = [31]uint16{
	0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
}

// Credits decodes an ACK syndrome's credit count. unlimited is true for code
// 31, which means the responder does not report credits.
func (s Syndrome) Credits() (n int, unlimited bool) {
	c := s.Value()
	if c == CreditsUnlimited {
		return 0, true
	}
	return int(creditTable[c]), false
}

// CreditCode returns the largest credit code whose count does not exceed n
// free receive WQEs, so a responder never advertises more than it has.
// Every ACK asks, so it searches the sorted table by halves (5 steps)
// rather than reading all 31 entries.
func CreditCode(n int) uint8 {
	lo, hi := 0, len(creditTable) // creditTable[lo] <= n < creditTable[hi], with [31] = ∞
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if int(creditTable[mid]) <= n {
			lo = mid
		} else {
			hi = mid
		}
	}
	return uint8(lo)
}

// rnrTimerMicros is the RNR NAK timer table of IBTA Vol 1 Table 45 in
// microseconds. Code 25 is 61.44 ms (rxe has 61.41 ms, a typo).
var rnrTimerMicros = [32]uint32{
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
}

// RNRDelay returns the minimum wait that an RNR timer code asks for.
func RNRDelay(code uint8) time.Duration {
	return time.Duration(rnrTimerMicros[code&0x1F]) * time.Microsecond
}

func (s Syndrome) String() string {
	switch s.Type() {
	case AckTypeACK:
		if s.Value() == CreditsUnlimited {
			return "ACK"
		}
		n, _ := s.Credits()
		return "ACK credits=" + itoa(n)
	case AckTypeRNRNAK:
		return "RNR NAK timer=" + itoa(int(s.Value()))
	case AckTypeNAK:
		return "NAK " + s.NAK().String()
	}
	return "reserved syndrome"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
