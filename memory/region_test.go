// Tests of registration, deregistration, limits and fast-register MRs.

package memory

import (
	"math"
	"testing"
)

func TestNewTableConfig(t *testing.T) {
	tb := newTable(t, Config{})
	if c := tb.Config(); c.MaxRegions != DefaultMaxRegions || c.MaxWindows != DefaultMaxWindows || c.MaxRegionSize != DefaultMaxRegionSize {
		t.Errorf("defaults: %+v", c)
	}
	for _, c := range []Config{{MaxRegions: -1}, {MaxWindows: -2}, {MaxRegions: MaxKeyIndex, MaxWindows: 1}} {
		if _, err := NewTable(c); err == nil {
			t.Errorf("NewTable(%+v) succeeded", c)
		}
	}
	if _, err := NewTable(Config{MaxRegions: MaxKeyIndex - 1, MaxWindows: 1}); err != nil {
		t.Errorf("full key space: %v", err)
	}
}

func TestRegisterErrors(t *testing.T) {
	tb := newTable(t, Config{MaxRegions: 2, MaxRegionSize: 4096})
	mem := make([]byte, 64)
	for _, c := range []struct {
		name string
		mem  []byte
		iova uint64
		acc  Access
		want error
	}{
		{"remote write without local write", mem, 0, RemoteWrite, ErrInvalidAccess},
		{"remote atomic without local write", mem, 0, RemoteAtomic | RemoteRead, ErrInvalidAccess},
		{"unknown flag", mem, 0, 1 << 7, ErrInvalidAccess},
		{"empty", nil, 0, 0, ErrInvalidArgument},
		{"empty non-nil", mem[:0], 0, 0, ErrInvalidArgument},
		{"too large", make([]byte, 4097), 0, 0, ErrTooLarge},
		{"iova overflow", mem, math.MaxUint64 - 62, 0, ErrInvalidArgument},
		{"iova at top", mem, math.MaxUint64 - 63, 0, nil},
		{"max size", make([]byte, 4096), 0, 0, nil},
		{"limit", mem, 0, 0, ErrNoResources},
	} {
		_, err := tb.Register(1, c.mem, c.iova, c.acc)
		wantErr(t, c.name, err, c.want)
	}
	if r, w := tb.Counts(); r != 2 || w != 0 {
		t.Errorf("Counts = %d, %d", r, w)
	}
}

func TestRegionAccessors(t *testing.T) {
	tb := newTable(t, Config{})
	r := mustRegister(t, tb, 7, make([]byte, 100), 0x5000, LocalWrite|RemoteRead)
	if r.PD() != 7 || r.IOVA() != 0x5000 || r.Len() != 100 || r.Access() != LocalWrite|RemoteRead || !r.Valid() || r.Fast() {
		t.Errorf("accessors: pd %d iova %#x len %d access %v valid %v", r.PD(), r.IOVA(), r.Len(), r.Access(), r.Valid())
	}
	z := mustRegister(t, tb, 7, make([]byte, 100), 0x5000, RemoteRead|ZeroBased)
	if z.IOVA() != 0 {
		t.Errorf("zero-based IOVA = %#x", z.IOVA())
	}
	// Zero-based: wire addresses are offsets, the iova is not an address.
	if ref, f := tb.CheckRemote(7, 0, z.RKey(), 0, 100, RemoteRead); f != Ok {
		t.Errorf("zero-based offset 0: %v", f)
	} else {
		ref.Release()
	}
	if _, f := tb.CheckRemote(7, 0, z.RKey(), 0x5000, 1, RemoteRead); f != OutOfBounds {
		t.Errorf("zero-based at iova: %v", f)
	}
	if _, f := tb.CheckRemote(7, 0, z.RKey(), 99, 2, RemoteRead); f != OutOfBounds {
		t.Errorf("zero-based past end: %v", f)
	}
}

func TestRegisterCapsMemory(t *testing.T) {
	tb := newTable(t, Config{})
	backing := make([]byte, 32)
	for i := range backing {
		backing[i] = 0xee
	}
	r := mustRegister(t, tb, 1, backing[:16], 0, LocalWrite|RemoteWrite|RemoteRead)
	ref, f := tb.CheckRemote(1, 0, r.RKey(), 0, 16, RemoteWrite|RemoteRead)
	if f != Ok {
		t.Fatal(f)
	}
	defer ref.Release()
	if f := ref.Write(8, make([]byte, 9)); f != OutOfBounds {
		t.Errorf("write past the registered length: %v", f)
	}
	if f := ref.Write(0, make([]byte, 16)); f != Ok {
		t.Errorf("write whole region: %v", f)
	}
	if backing[16] != 0xee {
		t.Error("wrote past the registered slice")
	}
}

func TestDeregister(t *testing.T) {
	tb := newTable(t, Config{})
	r := mustRegister(t, tb, 1, make([]byte, 64), 0, LocalWrite|RemoteRead)
	key := r.RKey()
	ref, f := tb.CheckRemote(1, 0, key, 0, 8, RemoteRead)
	if f != Ok {
		t.Fatal(f)
	}
	if err := tb.Deregister(r); err != nil {
		t.Fatal(err)
	}
	if r.Valid() {
		t.Error("Valid after Deregister")
	}
	if _, f := tb.CheckRemote(1, 0, key, 0, 8, RemoteRead); f != BadKey {
		t.Errorf("after deregister: %v, want bad key", f)
	}
	if _, f := tb.CheckLocal(1, key, 0, 8, 0); f != BadKey {
		t.Errorf("local after deregister: %v, want bad key", f)
	}
	// The copy in progress completes, and Drained waits for it.
	select {
	case <-r.Drained():
		t.Error("drained while a Ref is held")
	default:
	}
	if ref.Valid() {
		t.Error("Ref.Valid after deregister")
	}
	if f := ref.Read(0, make([]byte, 8)); f != Ok {
		t.Errorf("read through held ref: %v", f)
	}
	ref.Release()
	ref.Release() // no-op on the same variable
	<-r.Drained()
	wantErr(t, "double deregister", tb.Deregister(r), ErrInvalidArgument)
	other := newTable(t, Config{})
	r2 := mustRegister(t, other, 1, make([]byte, 8), 0, 0)
	wantErr(t, "foreign region", tb.Deregister(r2), ErrInvalidArgument)
	wantErr(t, "nil region", tb.Deregister(nil), ErrInvalidArgument)
	if n, _ := tb.Counts(); n != 0 {
		t.Errorf("%d regions left", n)
	}
}

func TestFastMR(t *testing.T) {
	tb := newTable(t, Config{})
	r, err := tb.AllocFastMR(3)
	if err != nil {
		t.Fatal(err)
	}
	k0 := r.RKey()
	if r.Valid() || !r.Fast() || r.Len() != 0 {
		t.Error("fresh fast MR is valid")
	}
	if _, f := tb.CheckRemote(3, 0, k0, 0, 1, 0); f != BadKey {
		t.Errorf("unregistered fast MR: %v", f)
	}
	if f := tb.Invalidate(3, 0, k0); f != BadKey {
		t.Errorf("invalidate unregistered fast MR: %v", f)
	}
	<-r.Drained()

	mem := make([]byte, 64)
	k1, err := tb.FastRegister(r, mem, 0x1000, LocalWrite|RemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	if KeyIndex(k1) != KeyIndex(k0) || k1 == k0 || r.RKey() != k1 || !r.Valid() {
		t.Errorf("keys %#x -> %#x, RKey %#x", k0, k1, r.RKey())
	}
	_, err = tb.FastRegister(r, mem, 0, 0)
	wantErr(t, "fast register a valid MR", err, ErrBusy)

	ref, f := tb.CheckRemote(3, 0, k1, 0x1000, 64, RemoteWrite)
	if f != Ok {
		t.Fatal(f)
	}
	if f := tb.Invalidate(4, 0, k1); f != BadPD {
		t.Errorf("invalidate from another PD: %v", f)
	}
	if f := tb.Invalidate(3, 9, k1); f != Ok {
		t.Fatalf("invalidate: %v", f)
	}
	if f := tb.Invalidate(3, 9, k1); f != Ok {
		t.Errorf("invalidate again: %v", f)
	}
	if _, f := tb.CheckRemote(3, 0, k1, 0x1000, 1, RemoteWrite); f != Invalidated {
		t.Errorf("after invalidate: %v, want invalidated", f)
	}
	if _, f := tb.CheckLocal(3, k1, 0x1000, 1, 0); f != Invalidated {
		t.Errorf("local after invalidate: %v, want invalidated", f)
	}
	if f := ref.Write(0x1000, []byte{1}); f != Ok || mem[0] != 1 {
		t.Errorf("held ref after invalidate: %v", f)
	}
	drained := r.Drained()
	ref.Release()
	<-drained

	k2, err := tb.FastRegister(r, mem[8:], 0, RemoteRead|ZeroBased)
	if err != nil {
		t.Fatal(err)
	}
	if k2 == k1 || KeyIndex(k2) != KeyIndex(k1) {
		t.Errorf("re-registration key %#x after %#x", k2, k1)
	}
	if _, f := tb.CheckRemote(3, 0, k1, 0x1000, 1, RemoteWrite); f != BadKey {
		t.Errorf("old key after re-registration: %v, want bad key", f)
	}
	if r.Access() != RemoteRead|ZeroBased || r.Len() != 56 || r.IOVA() != 0 {
		t.Errorf("re-registered: %v %d %#x", r.Access(), r.Len(), r.IOVA())
	}
	_, err = tb.FastRegister(r, mem, 0, RemoteWrite)
	wantErr(t, "bad access", err, ErrInvalidAccess)
	plain := mustRegister(t, tb, 3, mem, 0, 0)
	_, err = tb.FastRegister(plain, mem, 0, 0)
	wantErr(t, "fast register a plain MR", err, ErrInvalidArgument)
	if f := tb.Invalidate(3, 0, plain.RKey()); f != CannotInvalidate {
		t.Errorf("invalidate a plain MR: %v", f)
	}
	if err := tb.Deregister(r); err != nil {
		t.Fatal(err)
	}
	_, err = tb.FastRegister(r, mem, 0, 0)
	wantErr(t, "fast register deregistered", err, ErrInvalidArgument)
	if n, _ := tb.Counts(); n != 1 {
		t.Errorf("%d regions", n)
	}
	tl := newTable(t, Config{MaxRegions: 1})
	mustRegister(t, tl, 1, mem, 0, 0)
	_, err = tl.AllocFastMR(1)
	wantErr(t, "fast MR over limit", err, ErrNoResources)
}
