// Tests of memory windows: the IBTA bind rules, Type 1 re-bind and unbind,
// Type 2B QP binding and invalidation, zero-based windows, deallocation, and
// MR deregistration while windows are bound.

package memory

import (
	"testing"
)

func TestBindRules(t *testing.T) {
	tb := newTable(t, Config{})
	const pd = PD(1)
	mem := make([]byte, 4096)
	mr := mustRegister(t, tb, pd, mem, 0x10000, LocalWrite|MWBind)
	noBind := mustRegister(t, tb, pd, mem, 0x10000, LocalWrite|RemoteRead)
	noLW := mustRegister(t, tb, pd, mem, 0x10000, MWBind|RemoteRead)
	zb := mustRegister(t, tb, pd, mem, 0, LocalWrite|MWBind|ZeroBased)
	otherPD := mustRegister(t, tb, pd+1, mem, 0x10000, LocalWrite|MWBind)
	dead := mustRegister(t, tb, pd, mem, 0x10000, LocalWrite|MWBind)
	if err := tb.Deregister(dead); err != nil {
		t.Fatal(err)
	}
	foreign := mustRegister(t, newTable(t, Config{}), pd, mem, 0x10000, LocalWrite|MWBind)

	for _, c := range []struct {
		name string
		typ  WindowType
		pd   PD
		b    Binding
		want error
	}{
		{"ok type 1", Type1, pd, Binding{mr, 0x10000, 4096, RemoteRead | RemoteWrite | RemoteAtomic, 0}, nil},
		{"ok type 2B", Type2B, pd, Binding{mr, 0x10100, 16, RemoteRead, 0}, nil},
		{"ok type 2B zero-based", Type2B, pd, Binding{mr, 0x10100, 16, RemoteRead | ZeroBased, 0}, nil},
		{"rights beyond the MR's remote rights (IBTA allows)", Type1, pd, Binding{mr, 0x10000, 8, RemoteWrite, 0}, nil},
		{"C10-72 QP in another PD", Type1, pd + 1, Binding{mr, 0x10000, 8, RemoteRead, 0}, ErrInvalidArgument},
		{"MR in another PD", Type1, pd, Binding{otherPD, 0x10000, 8, RemoteRead, 0}, ErrInvalidArgument},
		{"C10-73 MR without MWBind", Type1, pd, Binding{noBind, 0x10000, 8, RemoteRead, 0}, ErrInvalidAccess},
		{"C10-74 writable window, MR without LocalWrite", Type1, pd, Binding{noLW, 0x10000, 8, RemoteWrite, 0}, ErrInvalidAccess},
		{"C10-74 atomic window, MR without LocalWrite", Type2B, pd, Binding{noLW, 0x10000, 8, RemoteAtomic, 0}, ErrInvalidAccess},
		{"read window on MR without LocalWrite", Type1, pd, Binding{noLW, 0x10000, 8, RemoteRead, 0}, nil},
		{"C10-75 before MR", Type1, pd, Binding{mr, 0xffff, 8, RemoteRead, 0}, ErrInvalidArgument},
		{"C10-75 past MR", Type1, pd, Binding{mr, 0x10ff9, 8, RemoteRead, 0}, ErrInvalidArgument},
		{"C10-75 wraps", Type2B, pd, Binding{mr, 0x10008, ^uint64(0), RemoteRead, 0}, ErrInvalidArgument},
		{"o10-36.2.2 zero-based type 1", Type1, pd, Binding{mr, 0x10000, 8, RemoteRead | ZeroBased, 0}, ErrInvalidArgument},
		{"o10-37.2.40 type 2B zero length", Type2B, pd, Binding{mr, 0x10000, 0, RemoteRead, 0}, ErrInvalidArgument},
		{"o10-37.2.40 type 2B no MR", Type2B, pd, Binding{nil, 0x10000, 8, RemoteRead, 0}, ErrInvalidArgument},
		{"zero-based MR", Type1, pd, Binding{zb, 0, 8, RemoteRead, 0}, ErrInvalidArgument},
		{"deregistered MR", Type1, pd, Binding{dead, 0x10000, 8, RemoteRead, 0}, ErrInvalidArgument},
		{"MR of another table", Type1, pd, Binding{foreign, 0x10000, 8, RemoteRead, 0}, ErrInvalidArgument},
		{"LocalWrite in window: ignored, as rxe", Type1, pd, Binding{mr, 0x10000, 8, LocalWrite, 0}, nil},
		{"MWBind in window", Type1, pd, Binding{mr, 0x10000, 8, MWBind, 0}, ErrInvalidAccess},
	} {
		w, err := tb.AllocWindow(pd, c.typ)
		if err != nil {
			t.Fatal(err)
		}
		old := w.RKey()
		key, err := tb.Bind(c.pd, 3, w, c.b)
		wantErr(t, c.name, err, c.want)
		if err == nil {
			if key == old || KeyIndex(key) != KeyIndex(old) || w.RKey() != key || !w.Bound() {
				t.Errorf("%s: key %#x after %#x", c.name, key, old)
			}
		} else if w.RKey() != old || w.Bound() {
			t.Errorf("%s: failed bind changed the window", c.name)
		}
		if err := tb.DeallocWindow(w); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tb.AllocWindow(pd, 3); err == nil {
		t.Error("AllocWindow type 3")
	}
	if r, w := tb.Counts(); r != 5 || w != 0 {
		t.Errorf("Counts = %d, %d", r, w)
	}
}

func TestWindowAccess(t *testing.T) {
	tb := newTable(t, Config{})
	const pd = PD(1)
	mem := aligned(256)
	for i := range mem {
		mem[i] = byte(i)
	}
	mr := mustRegister(t, tb, pd, mem, 0x1000, LocalWrite|MWBind) // no remote rights of its own
	w1, _ := tb.AllocWindow(pd, Type1)
	k1, err := tb.Bind(pd, 0, w1, Binding{MR: mr, Addr: 0x1040, Length: 64, Access: RemoteRead})
	if err != nil {
		t.Fatal(err)
	}
	w2, _ := tb.AllocWindow(pd, Type2B)
	k2, err := tb.Bind(pd, 7, w2, Binding{MR: mr, Addr: 0x1080, Length: 32, Access: RemoteWrite | RemoteAtomic | ZeroBased})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		qpn    uint32
		key    uint32
		va     uint64
		length uint32
		need   Access
		want   Fault
	}{
		{"MR has no remote read", 0, mr.RKey(), 0x1040, 1, RemoteRead, NoAccess},
		{"type 1 read inside", 5, k1, 0x1040, 64, RemoteRead, Ok},
		{"type 1 any QP", 6, k1, 0x1070, 16, RemoteRead, Ok},
		{"type 1 before window", 0, k1, 0x103f, 1, RemoteRead, OutOfBounds},
		{"type 1 past window", 0, k1, 0x1070, 17, RemoteRead, OutOfBounds},
		{"type 1 write", 0, k1, 0x1040, 1, RemoteWrite, NoAccess},
		{"type 2B zero-based", 7, k2, 0, 32, RemoteWrite, Ok},
		{"type 2B past end", 7, k2, 8, 25, RemoteWrite, OutOfBounds},
		{"type 2B at MR address", 7, k2, 0x1080, 1, RemoteWrite, OutOfBounds},
		{"type 2B other QP", 8, k2, 0, 1, RemoteWrite, BadQP},
		{"type 2B other PD", 7, k2, 0, 1, RemoteWrite, BadPD},
		{"type 2B atomic", 7, k2, 8, 8, RemoteAtomic, Ok},
		{"type 2B atomic misaligned", 7, k2, 4, 8, RemoteAtomic, Misaligned},
	} {
		p := pd
		if c.want == BadPD {
			p = pd + 1
		}
		ref, f := tb.CheckRemote(p, c.qpn, c.key, c.va, c.length, c.need)
		if f != c.want {
			t.Errorf("%s: %v, want %v", c.name, f, c.want)
		}
		ref.Release()
	}
	// Zero-based window offset 8 is MR byte 0x88.
	ref, f := tb.CheckRemote(pd, 7, k2, 8, 8, RemoteWrite)
	if f != Ok {
		t.Fatal(f)
	}
	if f := ref.Write(8, []byte{0xaa}); f != Ok || mem[0x88] != 0xaa {
		t.Errorf("zero-based write: %v, mem[0x88] = %#x", f, mem[0x88])
	}
	ref.Release()
	ref, f = tb.CheckRemote(pd, 0, k1, 0x1041, 2, RemoteRead)
	if f != Ok {
		t.Fatal(f)
	}
	buf := make([]byte, 2)
	if f := ref.Read(0x1041, buf); f != Ok || buf[0] != 0x41 || buf[1] != 0x42 {
		t.Errorf("type 1 read: %v % x", f, buf)
	}
	ref.Release()
}

func TestWindowLifecycle(t *testing.T) {
	tb := newTable(t, Config{})
	const pd = PD(1)
	mem := make([]byte, 256)
	mr := mustRegister(t, tb, pd, mem, 0x1000, LocalWrite|MWBind)
	w1, _ := tb.AllocWindow(pd, Type1)
	w2, _ := tb.AllocWindow(pd, Type2B)
	if w1.Type() != Type1 || w2.Type() != Type2B || w1.PD() != pd || w1.Bound() || w2.Bound() {
		t.Error("fresh windows")
	}
	if w1.Type().String() != "type 1" || w2.Type().String() != "type 2B" || WindowType(9).String() != "WindowType(9)" {
		t.Error("WindowType.String")
	}
	if _, f := tb.CheckRemote(pd, 0, w1.RKey(), 0x1000, 1, 0); f != BadKey {
		t.Errorf("unbound window: %v", f)
	}
	b := Binding{MR: mr, Addr: 0x1000, Length: 16, Access: RemoteRead}
	k1, _ := tb.Bind(pd, 0, w1, b)
	k2, _ := tb.Bind(pd, 4, w2, b)

	// Deregistering an MR with bound windows fails (EBUSY).
	wantErr(t, "deregister with windows", tb.Deregister(mr), ErrBusy)

	// Type 1: re-bind moves the window and kills the old key.
	held, f := tb.CheckRemote(pd, 0, k1, 0x1000, 16, RemoteRead)
	if f != Ok {
		t.Fatal(f)
	}
	k1b, err := tb.Bind(pd, 0, w1, Binding{MR: mr, Addr: 0x1010, Length: 16, Access: RemoteRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, f := tb.CheckRemote(pd, 0, k1, 0x1000, 1, RemoteRead); f != BadKey {
		t.Errorf("type 1 old key after re-bind: %v", f)
	}
	if held.Valid() {
		t.Error("held ref valid after re-bind")
	}
	if f := held.Read(0x1000, make([]byte, 16)); f != Ok { // in-flight copy completes
		t.Errorf("held ref after re-bind: %v", f)
	}
	held.Release()
	if mr.windows != 2 {
		t.Errorf("MR window count %d", mr.windows)
	}
	// Type 1 cannot be invalidated; unbinding is a zero-length bind.
	if f := tb.Invalidate(pd, 0, k1b); f != CannotInvalidate {
		t.Errorf("invalidate type 1: %v", f)
	}
	k1c, err := tb.Bind(pd, 0, w1, Binding{})
	if err != nil {
		t.Fatal(err)
	}
	if k1c == k1b || w1.Bound() {
		t.Error("unbind")
	}
	if _, f := tb.CheckRemote(pd, 0, k1b, 0x1010, 1, RemoteRead); f != BadKey {
		t.Errorf("type 1 key after unbind: %v", f)
	}

	// Type 2B: cannot be re-bound while bound; invalidation by its QP only.
	_, err = tb.Bind(pd, 4, w2, b)
	wantErr(t, "re-bind bound type 2B", err, ErrBusy)
	if f := tb.Invalidate(pd, 5, k2); f != BadQP {
		t.Errorf("invalidate from another QP: %v", f)
	}
	if f := tb.Invalidate(pd+1, 4, k2); f != BadPD {
		t.Errorf("invalidate from another PD: %v", f)
	}
	if f := tb.Invalidate(pd, 4, k2^0xff); f != BadKey {
		t.Errorf("invalidate wrong key byte: %v", f)
	}
	if f := tb.Invalidate(pd, 4, k2); f != Ok {
		t.Errorf("invalidate: %v", f)
	}
	if f := tb.Invalidate(pd, 4, k2); f != Ok {
		t.Errorf("invalidate twice: %v", f)
	}
	if _, f := tb.CheckRemote(pd, 4, k2, 0x1000, 1, RemoteRead); f != Invalidated {
		t.Errorf("after invalidate: %v", f)
	}
	if w2.Bound() {
		t.Error("bound after invalidate")
	}
	if mr.windows != 0 {
		t.Errorf("MR window count %d", mr.windows)
	}
	// Re-bind after invalidation, from another QP: the window follows it.
	k2b, err := tb.Bind(pd, 6, w2, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, f := tb.CheckRemote(pd, 4, k2b, 0x1000, 1, RemoteRead); f != BadQP {
		t.Errorf("old QP after re-bind: %v", f)
	}
	if _, f := tb.CheckRemote(pd, 6, k2, 0x1000, 1, RemoteRead); f != BadKey {
		t.Errorf("old key after re-bind: %v", f)
	}
	// An MR with bound windows cannot be invalidated either.
	fmr, _ := tb.AllocFastMR(pd)
	fk, err := tb.FastRegister(fmr, mem, 0x1000, LocalWrite|MWBind)
	if err != nil {
		t.Fatal(err)
	}
	w3, _ := tb.AllocWindow(pd, Type1)
	if _, err := tb.Bind(pd, 0, w3, Binding{MR: fmr, Addr: 0x1000, Length: 8, Access: RemoteRead}); err != nil {
		t.Fatal(err)
	}
	if f := tb.Invalidate(pd, 0, fk); f != CannotInvalidate {
		t.Errorf("invalidate MR with windows: %v", f)
	}
	// Dealloc unbinds; then the MRs can go.
	for _, w := range []*Window{w1, w2, w3} {
		if err := tb.DeallocWindow(w); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, "dealloc twice", tb.DeallocWindow(w1), ErrInvalidArgument)
	_, err = tb.Bind(pd, 0, w1, b)
	wantErr(t, "bind deallocated", err, ErrInvalidArgument)
	if _, f := tb.CheckRemote(pd, 6, k2b, 0x1000, 1, RemoteRead); f != BadKey {
		t.Errorf("deallocated window key: %v", f)
	}
	if f := tb.Invalidate(pd, 0, fk); f != Ok {
		t.Errorf("invalidate MR after dealloc: %v", f)
	}
	wantErr(t, "deregister", tb.Deregister(mr), nil)
	wantErr(t, "deregister fast", tb.Deregister(fmr), nil)
	if r, w := tb.Counts(); r != 0 || w != 0 {
		t.Errorf("Counts = %d, %d", r, w)
	}
	tl := newTable(t, Config{MaxWindows: 1})
	if _, err := tl.AllocWindow(pd, Type1); err != nil {
		t.Fatal(err)
	}
	_, err = tl.AllocWindow(pd, Type1)
	wantErr(t, "window limit", err, ErrNoResources)
	wantErr(t, "foreign window", tb.DeallocWindow(w1), ErrInvalidArgument)
	_, err = tl.Bind(pd, 0, w1, b)
	wantErr(t, "bind foreign window", err, ErrInvalidArgument)
}

// TestWindowKeepsMRMemory: a held window Ref keeps the MR's memory even
// after the window is deallocated and the MR deregistered.
func TestWindowKeepsMRMemory(t *testing.T) {
	tb := newTable(t, Config{})
	mem := make([]byte, 64)
	mr := mustRegister(t, tb, 1, mem, 0, LocalWrite|MWBind)
	w, _ := tb.AllocWindow(1, Type2B)
	k, err := tb.Bind(1, 1, w, Binding{MR: mr, Addr: 0, Length: 64, Access: RemoteWrite})
	if err != nil {
		t.Fatal(err)
	}
	ref, f := tb.CheckRemote(1, 1, k, 0, 64, RemoteWrite)
	if f != Ok {
		t.Fatal(f)
	}
	drained := mr.Drained()
	if err := tb.DeallocWindow(w); err != nil {
		t.Fatal(err)
	}
	if err := tb.Deregister(mr); err != nil {
		t.Fatal(err)
	}
	select {
	case <-drained:
		t.Fatal("drained while a window Ref is held")
	default:
	}
	if f := ref.Write(0, []byte{9}); f != Ok || mem[0] != 9 {
		t.Errorf("write: %v", f)
	}
	ref.Release()
	<-drained
}
