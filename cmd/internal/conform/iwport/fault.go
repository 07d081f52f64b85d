package iwport

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"sync"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/transport/stream"
)

// Dir is a direction of the DUT's stream, seen from the DUT.
type Dir uint8

// Directions.
const (
	Out Dir = iota // what the DUT sends
	In             // what the DUT receives
)

func (d Dir) String() string {
	if d == Out {
		return "out"
	}
	return "in"
}

// Unit is one MPA frame or FPDU of the DUT's stream, handed to a Fault.
type Unit struct {
	Dir Dir
	// MPA is true for the MPA Request or Reply (the first unit of each
	// direction), false for an FPDU.
	MPA bool
	// Bytes is the whole unit (a copy the fault may edit in place): the
	// MPA frame, or the FPDU from ULPDU_Length through the CRC.
	Bytes []byte
}

// ULPDU returns the FPDU's ULPDU as a view into Bytes (nil for an MPA
// frame or a runt).
func (u *Unit) ULPDU() []byte {
	if u.MPA || len(u.Bytes) < wire.MinFPDULen {
		return nil
	}
	n := int(binary.BigEndian.Uint16(u.Bytes))
	if wire.LengthFieldLen+n > len(u.Bytes) {
		return nil
	}
	return u.Bytes[wire.LengthFieldLen : wire.LengthFieldLen+n]
}

// Opcode is the RDMAP opcode of an FPDU's segment (0xFF when there is
// none).
func (u *Unit) Opcode() wire.Opcode {
	b := u.ULPDU()
	if len(b) < 2 {
		return 0xFF
	}
	return wire.DDPHeader(b).Opcode()
}

// Fault decides what the NIC really sends or receives in place of u: nil
// drops it, [][]byte{u.Bytes} keeps it (edited or not), more entries
// add units. An FPDU whose CRC was right is given a right CRC again after
// the fault ran, so a fault edits headers without caring for the CRC; a
// fault that wants a bad CRC writes it into a unit of its own.
type Fault func(u *Unit) [][]byte

// Network wraps a NIC's stream.Network so that every connection goes
// through f.
func Network(inner stream.Network, f Fault) stream.Network {
	return &faultNet{inner: inner, f: f}
}

type faultNet struct {
	inner stream.Network
	f     Fault
}

func (n *faultNet) Dial(local netip.Addr, remote netip.AddrPort, done func(stream.Conn, error)) func() {
	return n.inner.Dial(local, remote, func(c stream.Conn, err error) {
		if c != nil {
			c = newFaultConn(c, n.f)
		}
		done(c, err)
	})
}

func (n *faultNet) Listen(addr netip.AddrPort) (stream.Listener, error) {
	l, err := n.inner.Listen(addr)
	if err != nil {
		return nil, err
	}
	return &faultListener{Listener: l, f: n.f}, nil
}

type faultListener struct {
	stream.Listener
	f Fault
}

func (l *faultListener) SetAcceptor(onConn func(stream.Conn)) {
	l.Listener.SetAcceptor(func(c stream.Conn) { onConn(newFaultConn(c, l.f)) })
}

// maxUnit bounds what a direction holds back waiting for a unit to
// complete; beyond it (garbage, markers) the direction passes through.
const maxUnit = 1 << 17

// cutter cuts one direction of the stream into units.
type cutter struct {
	buf     []byte
	mpa     []byte // the direction's MPA frame, once seen
	through bool   // pass octets on uncut from here on
}

type faultConn struct {
	stream.Conn
	f Fault

	mu       sync.Mutex
	out, in  cutter
	pending  []byte // units the inner Conn refused for now
	writable func()
}

func newFaultConn(c stream.Conn, f Fault) *faultConn {
	fc := &faultConn{Conn: c, f: f}
	c.SetWritable(fc.onWritable)
	return fc
}

// markers reports whether direction d carries markers: the receiving
// side asked for them in its MPA frame.
func (c *faultConn) markers(d Dir) bool {
	other := c.in.mpa
	if d == In {
		other = c.out.mpa
	}
	return len(other) > 16 && other[16]&wire.MPAFlagMarkers != 0
}

// crc reports whether CRCs are in use (either frame asked).
func (c *faultConn) crc() bool {
	on := func(m []byte) bool { return len(m) > 16 && m[16]&wire.MPAFlagCRC != 0 }
	return on(c.in.mpa) || on(c.out.mpa)
}

// cut takes p into direction d and returns the octets to pass on.
// Caller holds mu.
func (c *faultConn) cut(d Dir, p []byte) []byte {
	k := &c.out
	if d == In {
		k = &c.in
	}
	if k.through {
		return p
	}
	k.buf = append(k.buf, p...)
	var res []byte
	for {
		n := c.unitLen(d, k)
		if n < 0 {
			k.through = true
			res = append(res, k.buf...)
			k.buf = nil
			return res
		}
		if n == 0 || len(k.buf) < n {
			return res
		}
		u := Unit{Dir: d, MPA: k.mpa == nil, Bytes: bytes.Clone(k.buf[:n])}
		k.buf = k.buf[n:]
		if u.MPA {
			k.mpa = bytes.Clone(u.Bytes)
		}
		for _, b := range c.apply(&u) {
			res = append(res, b...)
		}
	}
}

// unitLen is the length of the unit at the start of k.buf, 0 when more
// octets are needed, -1 to stop cutting.
func (c *faultConn) unitLen(d Dir, k *cutter) int {
	if len(k.buf) > maxUnit {
		return -1
	}
	if k.mpa == nil {
		if len(k.buf) < wire.MPAHeaderLen {
			return 0
		}
		return wire.MPAHeaderLen + int(binary.BigEndian.Uint16(k.buf[18:]))
	}
	if c.markers(d) {
		return -1
	}
	if len(k.buf) < wire.LengthFieldLen {
		return 0
	}
	return wire.FPDULen(int(binary.BigEndian.Uint16(k.buf)))
}

// apply runs the fault on u and repairs the CRCs it disturbed: a unit
// whose CRC was right, edited without touching its CRC field, gets the
// right CRC again.
func (c *faultConn) apply(u *Unit) [][]byte {
	crcOK := false
	var orig []byte
	if !u.MPA && c.crc() && len(u.Bytes) >= wire.MinFPDULen {
		crcOK = wire.FPDU(u.Bytes).ComputeCRC() == wire.FPDU(u.Bytes).WireCRC()
		orig = bytes.Clone(u.Bytes)
	}
	res := c.f(u)
	if !crcOK {
		return res
	}
	origCRC := wire.FPDU(orig).WireCRC()
	for _, b := range res {
		if len(b) < wire.MinFPDULen || wire.FPDULen(int(binary.BigEndian.Uint16(b))) != len(b) {
			continue
		}
		f := wire.FPDU(b)
		if f.WireCRC() == origCRC && !bytes.Equal(b, orig) {
			wire.PutCRC(b[len(b)-wire.CRCLen:], f.ComputeCRC())
		}
	}
	return res
}

// FixCRC gives an FPDU the right CRC (for a fault that repairs what the
// tester broke on purpose).
func FixCRC(fpdu []byte) {
	if len(fpdu) >= wire.MinFPDULen {
		wire.PutCRC(fpdu[len(fpdu)-wire.CRCLen:], wire.FPDU(fpdu).ComputeCRC())
	}
}

func (c *faultConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	out := c.cut(Out, b)
	c.pending = append(c.pending, out...)
	err := c.flushLocked()
	c.mu.Unlock()
	if err != nil && err != stream.ErrWouldBlock {
		return 0, err
	}
	return len(b), nil
}

// flushLocked writes the pending units. Caller holds mu.
func (c *faultConn) flushLocked() error {
	if len(c.pending) == 0 {
		return nil
	}
	if _, err := c.Conn.Write(c.pending); err != nil {
		return err
	}
	c.pending = c.pending[:0]
	return nil
}

func (c *faultConn) SetWritable(f func()) {
	c.mu.Lock()
	c.writable = f
	c.mu.Unlock()
}

func (c *faultConn) onWritable() {
	c.mu.Lock()
	c.flushLocked()
	f := c.writable
	c.mu.Unlock()
	if f != nil {
		f()
	}
}

func (c *faultConn) SetReceiver(onData func(p []byte), onClose func(err error)) {
	c.Conn.SetReceiver(func(p []byte) {
		c.mu.Lock()
		b := c.cut(In, p)
		c.mu.Unlock()
		if len(b) > 0 && onData != nil {
			onData(b)
		}
	}, onClose)
}

// Buffered counts the units held back as well.
func (c *faultConn) Buffered() int {
	c.mu.Lock()
	n := len(c.pending)
	c.mu.Unlock()
	return n + c.Conn.Buffered()
}

// Close sends what is held back, then closes.
func (c *faultConn) Close() error {
	c.mu.Lock()
	c.flushLocked()
	c.mu.Unlock()
	return c.Conn.Close()
}
