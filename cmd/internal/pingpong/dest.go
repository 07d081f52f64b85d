// The address message of ibv_rc_pingpong's side channel (rdma-core's
// libibverbs/examples/rc_pingpong.c and pingpong.c): what each side tells
// the other about its QP, in the exact bytes rc_pingpong sends, so an rnic
// pingpong and a real ibv_rc_pingpong could read each other's messages.

package pingpong

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
)

// MsgSize is the size of an address message: sizeof "0000:000000:000000:"
// plus 32 hex digits of GID, including the terminating NUL.
const MsgSize = 52

// doneMsg is what the client writes after it has read the server's address:
// "done" and its NUL, 5 bytes.
var doneMsg = [5]byte{'d', 'o', 'n', 'e', 0}

// ErrMalformed is wrapped by ParseDest for a message that is not an
// address message.
var ErrMalformed = errors.New("pingpong: malformed address message")

// Dest is one side's QP address as rc_pingpong exchanges it (struct
// pingpong_dest).
type Dest struct {
	LID uint16
	QPN uint32 // 24 bits
	PSN uint32 // 24 bits
	// GID holds the raw GID bytes in wire order; all zero when the sender
	// gave no GID index.
	GID [16]byte
}

// GIDAddr returns the GID as an IPv6 address (IPv4-mapped for a RoCEv2 GID
// of an IPv4 address), the form inet_ntop prints.
func (d Dest) GIDAddr() netip.Addr { return netip.AddrFrom16(d.GID) }

// Marshal returns the 52-byte message: sprintf("%04x:%06x:%06x:%s", lid,
// qpn, psn, wgid) and its NUL, where wgid is the GID's bytes as 32 lower-case
// hex digits (rc_pingpong's gid_to_wire_gid prints each 4-byte chunk with
// %08x after htobe32, which is the bytes in order). Values wider than their
// field are printed whole by %x; Marshal masks them to the field so the
// message always has its fixed size.
func (d Dest) Marshal() [MsgSize]byte {
	var m [MsgSize]byte
	// 4+1+6+1+6+1+32 = 51 characters; the last byte stays the NUL.
	copy(m[:], fmt.Sprintf("%04x:%06x:%06x:%x", d.LID, d.QPN&0xFFFFFF, d.PSN&0xFFFFFF, d.GID[:]))
	return m
}

// ParseDest parses an address message as rc_pingpong's
// sscanf("%x:%x:%x:%s") followed by wire_gid_to_gid does, but strictly: the
// three numbers must be hex and fit their fields, and the GID must be
// exactly 32 hex digits followed by a NUL (or the end of the buffer).
// Anything after the NUL is ignored, as C string functions ignore it.
func ParseDest(msg []byte) (Dest, error) {
	// The C side treats the buffer as a string: it ends at the first NUL.
	for i, c := range msg {
		if c == 0 {
			msg = msg[:i]
			break
		}
	}
	var d Dest
	fields := splitColon(msg)
	if len(fields) != 4 {
		return Dest{}, fmt.Errorf("%w: %d colon-separated fields, want 4", ErrMalformed, len(fields))
	}
	lid, err := parseHex(fields[0], 16, "LID")
	if err != nil {
		return Dest{}, err
	}
	qpn, err := parseHex(fields[1], 24, "QPN")
	if err != nil {
		return Dest{}, err
	}
	psn, err := parseHex(fields[2], 24, "PSN")
	if err != nil {
		return Dest{}, err
	}
	g := fields[3]
	if len(g) != 32 {
		return Dest{}, fmt.Errorf("%w: GID has %d hex digits, want 32", ErrMalformed, len(g))
	}
	for i := range d.GID {
		v, err := strconv.ParseUint(string(g[2*i:2*i+2]), 16, 8)
		if err != nil {
			return Dest{}, fmt.Errorf("%w: GID byte %d: %q is not hex", ErrMalformed, i, g[2*i:2*i+2])
		}
		d.GID[i] = byte(v)
	}
	d.LID, d.QPN, d.PSN = uint16(lid), uint32(qpn), uint32(psn)
	return d, nil
}

// splitColon splits b at every ':'.
func splitColon(b []byte) [][]byte {
	var out [][]byte
	start := 0
	for i, c := range b {
		if c == ':' {
			out = append(out, b[start:i])
			start = i + 1
		}
	}
	return append(out, b[start:])
}

// parseHex parses a non-empty hex number of at most bits bits. Unlike
// sscanf's %x it refuses a sign, a 0x prefix and spaces: rc_pingpong never
// sends them, so they mean a peer that is not rc_pingpong.
func parseHex(b []byte, bits int, what string) (uint64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%w: empty %s", ErrMalformed, what)
	}
	for _, c := range b {
		if !isHex(c) {
			return 0, fmt.Errorf("%w: %s %q is not hex", ErrMalformed, what, b)
		}
	}
	v, err := strconv.ParseUint(string(b), 16, bits)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q exceeds %d bits", ErrMalformed, what, b, bits)
	}
	return v, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
