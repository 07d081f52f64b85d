// Writer and Reader: the little-endian field encoding of message bodies. A
// Reader never panics and never reads past its buffer: the first short or
// oversized field makes every later read return zero and Err report it, so
// a decoder reads all its fields and checks once.

package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("rnicd: malformed message")

// Writer appends fields to a buffer.
type Writer struct{ b []byte }

// NewWriter returns a Writer appending to buf[:0].
func NewWriter(buf []byte) *Writer { return &Writer{b: buf[:0]} }

// Bytes returns what was written.
func (w *Writer) Bytes() []byte { return w.b }

// Len returns the number of bytes written.
func (w *Writer) Len() int { return len(w.b) }

// Reset empties the Writer, keeping its buffer.
func (w *Writer) Reset() { w.b = w.b[:0] }

func (w *Writer) U8(v uint8)   { w.b = append(w.b, v) }
func (w *Writer) U16(v uint16) { w.b = binary.LittleEndian.AppendUint16(w.b, v) }
func (w *Writer) U32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *Writer) U64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }

// Bool writes 1 or 0.
func (w *Writer) Bool(v bool) {
	if v {
		w.U8(1)
	} else {
		w.U8(0)
	}
}

// Int writes a non-negative int as a uint64 (negative values as 0, which no
// field here means).
func (w *Writer) Int(v int) { w.U64(uint64(max(v, 0))) }

// Blob writes a length-prefixed byte string.
func (w *Writer) Blob(b []byte) {
	w.U32(uint32(len(b)))
	w.b = append(w.b, b...)
}

// String writes a length-prefixed string.
func (w *Writer) String(s string) {
	w.U32(uint32(len(s)))
	w.b = append(w.b, s...)
}

// Addr writes an IP address: a family byte (0 none, 4, 6) and 16 bytes.
func (w *Writer) Addr(a netip.Addr) {
	var b [16]byte
	switch {
	case a.Is4():
		w.U8(4)
		a4 := a.As4()
		copy(b[:], a4[:])
	case a.Is6():
		w.U8(6)
		b = a.As16()
	default:
		w.U8(0)
	}
	w.b = append(w.b, b[:]...)
}

// Raw appends b as is.
func (w *Writer) Raw(b []byte) { w.b = append(w.b, b...) }

// Reader reads fields from a buffer.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader of b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Reset makes r read b from the start.
func (r *Reader) Reset(b []byte) { *r = Reader{b: b} }

// Err returns the first decoding error.
func (r *Reader) Err() error { return r.err }

// Remaining returns the number of unread bytes.
func (r *Reader) Remaining() int { return len(r.b) - r.off }

// Done returns the first decoding error, or an error if bytes are left
// over: a body is exactly its fields.
func (r *Reader) Done() error {
	if r.err != nil {
		return r.err
	}
	if r.off != len(r.b) {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(r.b)-r.off)
	}
	return nil
}

func (r *Reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

// take returns the next n bytes, or nil after an error.
func (r *Reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail("field of %d bytes at offset %d of %d", n, r.off, len(r.b))
		return nil
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

func (r *Reader) U8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *Reader) U16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *Reader) U32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *Reader) U64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// Bool reads a byte that must be 0 or 1.
func (r *Reader) Bool() bool {
	v := r.U8()
	if v > 1 {
		r.fail("boolean %d", v)
	}
	return v == 1
}

// Int reads a uint64 that must fit a non-negative int32 (every count and
// limit of the verbs API does; bigger is garbage).
func (r *Reader) Int() int {
	v := r.U64()
	if v > 1<<31-1 {
		r.fail("integer %d out of range", v)
		return 0
	}
	return int(v)
}

// Blob reads a length-prefixed byte string of at most max bytes; the
// result aliases the buffer.
func (r *Reader) Blob(max int) []byte {
	n := r.U32()
	if r.err == nil && uint64(n) > uint64(max) {
		r.fail("%d-byte string, at most %d", n, max)
		return nil
	}
	return r.take(int(n))
}

// String reads a length-prefixed string of at most max bytes.
func (r *Reader) String(max int) string { return string(r.Blob(max)) }

// Addr reads an address written by Writer.Addr.
func (r *Reader) Addr() netip.Addr {
	fam := r.U8()
	b := r.take(16)
	if b == nil {
		return netip.Addr{}
	}
	// Unused bytes must be zero: one address, one encoding.
	switch {
	case fam == 0 && allZero(b):
		return netip.Addr{}
	case fam == 4 && allZero(b[4:]):
		return netip.AddrFrom4([4]byte(b[:4]))
	case fam == 6:
		return netip.AddrFrom16([16]byte(b))
	}
	r.fail("address of family %d: % x", fam, b)
	return netip.Addr{}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
