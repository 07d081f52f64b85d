// perftest's key message (linux-rdma/perftest,
// src/perftest_communication.h): the text record each side sends per QP
// over the side channel. rnic perf exchanges its keys in this exact form
// already, so that speaking perftest's whole protocol later only adds the
// steps around it.

package perf

import (
	"errors"
	"fmt"
	"strconv"
)

// Key message sizes, including the terminating NUL.
const (
	// KeyMsgSize is the message without GID (KEY_MSG_SIZE):
	// "%04x:%04x:%06x:%06x:%08x:%016llx:%08x".
	KeyMsgSize = 59
	// KeyMsgSizeGID is the message with GID (KEY_MSG_SIZE_GID), the one
	// RoCE uses: the same fields up to VAddr, then the 16 GID bytes as
	// "%02x:" each, then "%08x:" of the SRQ number.
	KeyMsgSizeGID = 108
)

// ErrKeyMsg is wrapped by ParseKey for a malformed message.
var ErrKeyMsg = errors.New("perf: malformed key message")

// Key is one QP's address and memory key as perftest exchanges them
// (struct pingpong_dest's wire fields).
type Key struct {
	LID      uint16   `json:"lid"`
	OutReads uint16   `json:"out_reads"` // outstanding RDMA READs/atomics the sender can issue
	QPN      uint32   `json:"qpn"`       // 24 bits
	PSN      uint32   `json:"psn"`       // 24 bits
	RKey     uint32   `json:"rkey"`
	VAddr    uint64   `json:"vaddr"` // the address the peer's operations target
	GID      [16]byte `json:"gid"`
	SRQN     uint32   `json:"srqn"`
}

// MarshalGID returns the 108-byte message with GID.
func (k Key) MarshalGID() [KeyMsgSizeGID]byte {
	var m [KeyMsgSizeGID]byte
	b := fmt.Appendf(nil, "%04x:%04x:%06x:%06x:%08x:%016x:", k.LID, k.OutReads, k.QPN&0xFFFFFF, k.PSN&0xFFFFFF, k.RKey, k.VAddr)
	for _, g := range k.GID {
		b = fmt.Appendf(b, "%02x:", g)
	}
	b = fmt.Appendf(b, "%08x:", k.SRQN)
	copy(m[:], b) // 107 characters; the NUL is m's last byte
	return m
}

// Marshal returns the 59-byte message without GID.
func (k Key) Marshal() [KeyMsgSize]byte {
	var m [KeyMsgSize]byte
	copy(m[:], fmt.Sprintf("%04x:%04x:%06x:%06x:%08x:%016x:%08x", k.LID, k.OutReads, k.QPN&0xFFFFFF, k.PSN&0xFFFFFF, k.RKey, k.VAddr, k.SRQN))
	return m
}

// keyField is one field of the message: its name and width in hex digits.
type keyField struct {
	name  string
	width int
}

var keyFields = []keyField{{"LID", 4}, {"out_reads", 4}, {"QPN", 6}, {"PSN", 6}, {"RKey", 8}, {"VAddr", 16}}

// ParseKey parses a message with or without GID, told apart by its length
// (KeyMsgSize or KeyMsgSizeGID; the NUL may be missing). Every field must
// have exactly its printed width of hex digits: perftest always prints
// them so, and a fixed layout leaves no room for a confused peer.
func ParseKey(msg []byte) (Key, error) {
	for i, c := range msg {
		if c == 0 {
			msg = msg[:i]
			break
		}
	}
	var k Key
	var vals [6]uint64
	p := msg
	for i, f := range keyFields {
		v, rest, err := hexField(p, f, true)
		if err != nil {
			return Key{}, err
		}
		vals[i], p = v, rest
	}
	k.LID, k.OutReads, k.QPN, k.PSN = uint16(vals[0]), uint16(vals[1]), uint32(vals[2]), uint32(vals[3])
	k.RKey, k.VAddr = uint32(vals[4]), vals[5]
	switch len(msg) {
	case KeyMsgSize - 1:
		v, rest, err := hexField(p, keyField{"SRQN", 8}, false)
		if err != nil {
			return Key{}, err
		}
		k.SRQN, p = uint32(v), rest
	case KeyMsgSizeGID - 1:
		for i := range k.GID {
			v, rest, err := hexField(p, keyField{"GID byte " + strconv.Itoa(i), 2}, true)
			if err != nil {
				return Key{}, err
			}
			k.GID[i], p = byte(v), rest
		}
		v, rest, err := hexField(p, keyField{"SRQN", 8}, true)
		if err != nil {
			return Key{}, err
		}
		k.SRQN, p = uint32(v), rest
	default:
		return Key{}, fmt.Errorf("%w: %d characters, want %d or %d", ErrKeyMsg, len(msg), KeyMsgSize-1, KeyMsgSizeGID-1)
	}
	if len(p) != 0 {
		return Key{}, fmt.Errorf("%w: %q after the last field", ErrKeyMsg, p)
	}
	return k, nil
}

// hexField reads f.width hex digits from p, then a ':' if colon, and
// returns the value and the rest.
func hexField(p []byte, f keyField, colon bool) (uint64, []byte, error) {
	n := f.width
	if colon {
		n++
	}
	if len(p) < n {
		return 0, nil, fmt.Errorf("%w: %s truncated", ErrKeyMsg, f.name)
	}
	digits := p[:f.width]
	for _, c := range digits {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return 0, nil, fmt.Errorf("%w: %s %q is not hex", ErrKeyMsg, f.name, digits)
		}
	}
	if colon && p[f.width] != ':' {
		return 0, nil, fmt.Errorf("%w: no ':' after %s", ErrKeyMsg, f.name)
	}
	v, _ := strconv.ParseUint(string(digits), 16, 64) // ≤ 16 hex digits: fits
	return v, p[n:], nil
}
