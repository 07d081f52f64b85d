// The 16-byte header of every control message (diagram in doc.go).

package proto

import (
	"encoding/binary"
	"fmt"
)

// Sizes and bounds of control messages.
//
//rnicd:cheader
const (
	HeaderLen = 16
	// MaxMessage is the largest message, header included; a bigger one
	// is malformed (the receiver's buffer is this size, so the socket
	// truncates it and says so).
	MaxMessage = 64 << 10
	// MaxFDs is the most descriptors one message carries.
	MaxFDs = 4
	// MaxErrorLen bounds the message of an error reply.
	MaxErrorLen = 1024
	// MaxName bounds names (devices, counters).
	MaxName = 64
)

// Header fields: byte offsets in the header (the diagram in doc.go).
//
//rnicd:cheader
const (
	hdrOp      = 0  // u16
	hdrKind    = 2  // u8
	hdrNFDs    = 3  // u8
	hdrSeq     = 4  // u32
	hdrStatus  = 8  // u32
	hdrBodyLen = 12 // u32
)

// Kind says what a message is.
type Kind uint8

// Message kinds.
const (
	KindRequest Kind = 1 // answered by a KindReply with its seq
	KindReply   Kind = 2
	KindEvent   Kind = 3 // unsolicited, daemon → client
	KindNotice  Kind = 4 // a request without a reply
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindReply:
		return "reply"
	case KindEvent:
		return "event"
	case KindNotice:
		return "notice"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Header is a decoded message header.
type Header struct {
	Op      Op
	Kind    Kind
	NFDs    uint8
	Seq     uint32
	Status  Status
	BodyLen uint32
}

// Append appends the header to b.
func (h *Header) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(h.Op))
	b = append(b, byte(h.Kind), h.NFDs)
	b = binary.LittleEndian.AppendUint32(b, h.Seq)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.Status))
	return binary.LittleEndian.AppendUint32(b, h.BodyLen)
}

// Put writes the header into b[:HeaderLen].
func (h *Header) Put(b []byte) {
	binary.LittleEndian.PutUint16(b[hdrOp:], uint16(h.Op))
	b[hdrKind], b[hdrNFDs] = byte(h.Kind), h.NFDs
	binary.LittleEndian.PutUint32(b[hdrSeq:], h.Seq)
	binary.LittleEndian.PutUint32(b[hdrStatus:], uint32(h.Status))
	binary.LittleEndian.PutUint32(b[hdrBodyLen:], h.BodyLen)
}

// DecodeMessage splits a received message into its header and body,
// checking the header against the message: a known kind, a body length
// equal to what arrived, no more than MaxFDs descriptors, and nfds equal
// to the number that came with it. It allocates nothing.
func DecodeMessage(msg []byte, nfds int) (Header, []byte, error) {
	var h Header
	if len(msg) < HeaderLen {
		return h, nil, fmt.Errorf("%w: %d-byte message, header is %d", ErrMalformed, len(msg), HeaderLen)
	}
	if len(msg) > MaxMessage {
		return h, nil, fmt.Errorf("%w: %d-byte message, at most %d", ErrMalformed, len(msg), MaxMessage)
	}
	h.Op = Op(binary.LittleEndian.Uint16(msg[hdrOp:]))
	h.Kind = Kind(msg[hdrKind])
	h.NFDs = msg[hdrNFDs]
	h.Seq = binary.LittleEndian.Uint32(msg[hdrSeq:])
	h.Status = Status(binary.LittleEndian.Uint32(msg[hdrStatus:]))
	h.BodyLen = binary.LittleEndian.Uint32(msg[hdrBodyLen:])
	switch {
	case h.Kind < KindRequest || h.Kind > KindNotice:
		return h, nil, fmt.Errorf("%w: kind %d", ErrMalformed, msg[hdrKind])
	case int64(h.BodyLen) != int64(len(msg)-HeaderLen):
		return h, nil, fmt.Errorf("%w: body length %d, message carries %d", ErrMalformed, h.BodyLen, len(msg)-HeaderLen)
	case h.NFDs > MaxFDs:
		return h, nil, fmt.Errorf("%w: %d descriptors, at most %d", ErrMalformed, h.NFDs, MaxFDs)
	case int(h.NFDs) != nfds:
		return h, nil, fmt.Errorf("%w: header counts %d descriptors, %d arrived", ErrMalformed, h.NFDs, nfds)
	case h.Kind != KindReply && h.Status != StatusOK:
		return h, nil, fmt.Errorf("%w: status %d on a %v", ErrMalformed, h.Status, h.Kind)
	}
	return h, msg[HeaderLen:], nil
}
