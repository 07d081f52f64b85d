package iwport

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/transport/stream"
)

// recConn is a stream.Conn that records what is written and lets a test
// deliver bytes to the receiver.
type recConn struct {
	stream.Conn
	out    []byte
	onData func([]byte)
}

func (c *recConn) Write(b []byte) (int, error)               { c.out = append(c.out, b...); return len(b), nil }
func (c *recConn) SetReceiver(d func([]byte), _ func(error)) { c.onData = d }
func (c *recConn) SetWritable(func())                        {}
func (c *recConn) Buffered() int                             { return 0 }
func (c *recConn) LocalAddr() netip.AddrPort                 { return netip.AddrPort{} }

// stream builds an MPA frame followed by FPDUs.
func testStream(crc bool) []byte {
	b, _ := wire.AppendMPAFrame(nil, &wire.MPAFields{CRC: crc, Rev: 2, Enhanced: true})
	for i := range 3 {
		h := wire.Headers{DDP: wire.DDPFields{Opcode: wire.OpSend, Last: true, MSN: uint32(i + 1)}}
		b = wire.AppendFPDU(b, wire.Framing{CRC: crc}, 0, wire.AppendSegment(nil, &h, bytes.Repeat([]byte{byte(i)}, 10+i)), nil)
	}
	return b
}

// through feeds p to a fault conn in chunks of n, both ways, and returns
// what came out of each side.
func through(f Fault, p []byte, n int) (out, in []byte) {
	rc := &recConn{}
	fc := newFaultConn(rc, f)
	fc.SetReceiver(func(b []byte) { in = append(in, b...) }, nil)
	for len(p) > 0 {
		k := min(n, len(p))
		fc.Write(p[:k])
		rc.onData(p[:k])
		p = p[k:]
	}
	return rc.out, in
}

func keep(u *Unit) [][]byte { return [][]byte{u.Bytes} }

// FuzzFaultIdentity: with a fault that changes nothing, any bytes cut in
// any chunks come out unchanged both ways (a prefix of them: the octets
// of an unfinished unit wait), and the cutter never panics.
func FuzzFaultIdentity(f *testing.F) {
	f.Add(testStream(true), 1)
	f.Add(testStream(false), 7)
	f.Add([]byte("MPA ID Req Frame\x00\x02\xff\xff"), 3)
	f.Fuzz(func(t *testing.T, p []byte, n int) {
		n = max(1, n%64+1)
		out, in := through(keep, p, n)
		if !bytes.HasPrefix(p, out) || !bytes.HasPrefix(p, in) {
			t.Fatalf("identity fault changed the stream")
		}
	})
}

// TestFaultWhole: a whole stream passes whole, in any chunks.
func TestFaultWhole(t *testing.T) {
	for _, crc := range []bool{false, true} {
		p := testStream(crc)
		for n := 1; n <= len(p); n += 7 {
			if out, in := through(keep, p, n); !bytes.Equal(out, p) || !bytes.Equal(in, p) {
				t.Fatalf("crc=%v chunks of %d: the stream changed", crc, n)
			}
		}
	}
}

// TestFaultEditRepairsCRC: an edited FPDU whose CRC was right gets the
// right CRC again; one the fault gave a CRC of its own keeps it.
func TestFaultEditRepairsCRC(t *testing.T) {
	edit := func(u *Unit) [][]byte {
		if !u.MPA {
			u.ULPDU()[wire.DDPUntaggedLen] ^= 0xFF
		}
		return [][]byte{u.Bytes}
	}
	out, _ := through(edit, testStream(true), 5)
	d := wire.NewDeframer(wire.Framing{CRC: true}, wire.MaxULPDU)
	rest := out[wire.MPAHeaderLen+wire.MPAEnhancedLen:]
	for k := 0; len(rest) > 0; k++ {
		df, n, err := d.Next(rest)
		if err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
		if !df.CRCOK {
			t.Fatalf("FPDU %d: CRC not repaired", k)
		}
		if df.ULPDU[wire.DDPUntaggedLen] != ^byte(k) {
			t.Fatalf("FPDU %d: edit lost", k)
		}
	}
	zero := func(u *Unit) [][]byte {
		if !u.MPA {
			copy(u.Bytes[len(u.Bytes)-4:], []byte{0, 0, 0, 0})
		}
		return [][]byte{u.Bytes}
	}
	out, _ = through(zero, testStream(true), 64)
	if !bytes.Equal(out[len(out)-4:], []byte{0, 0, 0, 0}) {
		t.Fatalf("a CRC the fault wrote was replaced: % x", out[len(out)-4:])
	}
}
