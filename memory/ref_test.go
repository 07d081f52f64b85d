// Tests of copies through a Ref: bounds on every copy, and the rights the
// Ref was checked with.

package memory

import (
	"bytes"
	"math"
	"testing"
)

func TestRefReadWrite(t *testing.T) {
	tb := newTable(t, Config{})
	mem := make([]byte, 64)
	r := mustRegister(t, tb, 1, mem, 0x100, LocalWrite|RemoteRead|RemoteWrite)

	wr, f := tb.CheckRemote(1, 0, r.RKey(), 0x100, 8, RemoteWrite)
	if f != Ok {
		t.Fatal(f)
	}
	defer wr.Release()
	rd, f := tb.CheckRemote(1, 0, r.RKey(), 0x100, 8, RemoteRead)
	if f != Ok {
		t.Fatal(f)
	}
	defer rd.Release()

	if f := wr.Write(0x100+60, []byte{1, 2, 3, 4}); f != Ok {
		t.Errorf("write at end: %v", f)
	}
	if !bytes.Equal(mem[60:], []byte{1, 2, 3, 4}) {
		t.Errorf("mem = % x", mem[56:])
	}
	buf := make([]byte, 4)
	if f := rd.Read(0x100+60, buf); f != Ok || !bytes.Equal(buf, []byte{1, 2, 3, 4}) {
		t.Errorf("read: %v % x", f, buf)
	}
	for _, c := range []struct {
		name string
		ref  *Ref
		va   uint64
		n    int
		read bool
		want Fault
	}{
		{"write past end", &wr, 0x100 + 61, 4, false, OutOfBounds},
		{"write before", &wr, 0xff, 1, false, OutOfBounds},
		{"write wrap", &wr, math.MaxUint64, 2, false, OutOfBounds},
		{"read past end", &rd, 0x100 + 64, 1, true, OutOfBounds},
		{"read via write ref", &wr, 0x100, 1, true, NoAccess},
		{"write via read ref", &rd, 0x100, 1, false, NoAccess},
		{"zero-length write anywhere", &rd, math.MaxUint64, 0, false, Ok},
		{"zero-length read anywhere", &wr, 0, 0, true, Ok},
	} {
		var f Fault
		if c.read {
			f = c.ref.Read(c.va, make([]byte, c.n))
		} else {
			f = c.ref.Write(c.va, make([]byte, c.n))
		}
		if f != c.want {
			t.Errorf("%s: %v, want %v", c.name, f, c.want)
		}
	}

	// The empty Ref of a zero-length check moves nothing.
	var empty Ref
	if f := empty.Read(0, nil); f != Ok {
		t.Errorf("empty zero read: %v", f)
	}
	if f := empty.Write(0, []byte{1}); f != OutOfBounds {
		t.Errorf("empty write: %v", f)
	}
	if _, f := empty.FetchAdd(0, 1); f != OutOfBounds {
		t.Errorf("empty atomic: %v", f)
	}
	if !empty.Valid() || !empty.Empty() {
		t.Error("empty ref state")
	}
	empty.Release()

	// A local Ref: reads always, writes with LocalWrite only.
	lr, f := tb.CheckLocal(1, r.LKey(), 0x100, 1, 0)
	if f != Ok {
		t.Fatal(f)
	}
	if f := lr.Read(0x100, buf); f != Ok {
		t.Errorf("local read: %v", f)
	}
	if f := lr.Write(0x100, buf); f != NoAccess {
		t.Errorf("local write without LocalWrite: %v", f)
	}
	lr.Release()
}

func TestReleaseTwicePanics(t *testing.T) {
	tb := newTable(t, Config{})
	r := mustRegister(t, tb, 1, make([]byte, 8), 0, RemoteRead)
	ref, f := tb.CheckRemote(1, 0, r.RKey(), 0, 8, RemoteRead)
	if f != Ok {
		t.Fatal(f)
	}
	cp := ref
	ref.Release()
	if err := tb.Deregister(r); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("over-release did not panic")
		}
	}()
	cp.Release() // a copy released again: the count would go negative
}
