// Tests of re-registration: the key stays, the new memory, PD and access
// hold at once, the old registration is dead, and what may not be
// re-registered is refused.

package memory

import "testing"

func TestReregisterKeepsKey(t *testing.T) {
	tb := newTable(t, Config{})
	a, b := aligned(64), aligned(32)
	r := mustRegister(t, tb, 1, a, 0x1000, LocalWrite|RemoteWrite)
	key := r.LKey()

	// access only: the memory and addresses stay, the rights change
	if _, err := tb.Reregister(r, Rereg{PD: 1, Access: LocalWrite | RemoteRead}); err != nil {
		t.Fatal(err)
	}
	if r.LKey() != key || r.IOVA() != 0x1000 || r.Len() != 64 || r.Access() != LocalWrite|RemoteRead {
		t.Fatalf("after an access change: key %#x (was %#x) iova %#x len %d access %v", r.LKey(), key, r.IOVA(), r.Len(), r.Access())
	}
	if _, f := tb.CheckRemote(1, 0, key, 0x1000, 8, RemoteWrite); f != NoAccess {
		t.Errorf("remote write after dropping it: %v, want %v", f, NoAccess)
	}
	ref, f := tb.CheckRemote(1, 0, key, 0x1000, 8, RemoteRead)
	if f != Ok {
		t.Fatalf("remote read granted by the new access: %v", f)
	}
	ref.Release()

	// PD: the old one no longer reaches the region
	if _, err := tb.Reregister(r, Rereg{PD: 2, Access: LocalWrite}); err != nil {
		t.Fatal(err)
	}
	if _, f := tb.CheckLocal(1, key, 0x1000, 8, 0); f != BadPD {
		t.Errorf("old PD after a PD change: %v, want %v", f, BadPD)
	}
	if r.PD() != 2 {
		t.Errorf("PD() = %d, want 2", r.PD())
	}

	// translation: new memory at a new address, the old range gone
	if _, err := tb.Reregister(r, Rereg{PD: 2, Mem: b, IOVA: 0x8000, Access: LocalWrite}); err != nil {
		t.Fatal(err)
	}
	if _, f := tb.CheckLocal(2, key, 0x1000, 8, 0); f != OutOfBounds {
		t.Errorf("old address after a translation change: %v, want %v", f, OutOfBounds)
	}
	ref, f = tb.CheckLocal(2, key, 0x8000, 32, LocalWrite)
	if f != Ok {
		t.Fatalf("new address: %v", f)
	}
	if ref.Write(0x8000, []byte{7}) != Ok || b[0] != 7 {
		t.Error("a write through the key did not land in the new memory")
	}
	ref.Release()
	if r.LKey() != key {
		t.Errorf("key %#x after three re-registrations, want %#x", r.LKey(), key)
	}
}

func TestReregisterOldDrains(t *testing.T) {
	tb := newTable(t, Config{})
	r := mustRegister(t, tb, 1, aligned(64), 0x1000, LocalWrite)
	ref, f := tb.CheckLocal(1, r.LKey(), 0x1000, 8, LocalWrite)
	if f != Ok {
		t.Fatal(f)
	}
	drained, err := tb.Reregister(r, Rereg{PD: 1, Mem: aligned(64), IOVA: 0x2000, Access: LocalWrite})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Valid() {
		t.Error("a Ref of the old registration still valid")
	}
	select {
	case <-drained:
		t.Fatal("old registration drained while a Ref holds it")
	default:
	}
	ref.Release()
	<-drained
	select {
	case <-r.Drained():
		t.Error("the new registration drained")
	default:
	}
}

func TestReregisterRefused(t *testing.T) {
	tb := newTable(t, Config{})
	mem := aligned(64)
	r := mustRegister(t, tb, 1, mem, 0x1000, LocalWrite)
	key := r.LKey()
	_, err := tb.Reregister(r, Rereg{PD: 1, Access: RemoteWrite})
	wantErr(t, "remote write without local write", err, ErrInvalidAccess)
	_, err = tb.Reregister(r, Rereg{PD: 1, Mem: mem[:0], Access: LocalWrite})
	wantErr(t, "empty memory", err, ErrInvalidArgument)
	if r.Access() != LocalWrite || r.LKey() != key {
		t.Errorf("a refused re-registration changed the region: access %v key %#x", r.Access(), r.LKey())
	}
	fast, err := tb.AllocFastMR(1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tb.Reregister(fast, Rereg{PD: 1, Mem: mem, Access: LocalWrite})
	wantErr(t, "fast MR", err, ErrInvalidArgument)
	if err := tb.Deregister(r); err != nil {
		t.Fatal(err)
	}
	_, err = tb.Reregister(r, Rereg{PD: 1, Access: LocalWrite})
	wantErr(t, "deregistered", err, ErrInvalidArgument)
}

// TestReregisterClosedShared: a region over shared memory whose owner has
// closed it (rnicd closes its mapping once registered) keeps its memory
// through a PD or access change, and the mapping goes with the last
// registration.
func TestReregisterClosedShared(t *testing.T) {
	tb := newTable(t, Config{})
	s := mustShared(t, 4096)
	r := mustRegister(t, tb, 1, s.Bytes()[100:200], 0x100, LocalWrite)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Reregister(r, Rereg{PD: 2, Access: LocalWrite | RemoteRead}); err != nil {
		t.Fatalf("keeping closed shared memory: %v", err)
	}
	ref, f := tb.CheckLocal(2, r.LKey(), 0x100, 100, LocalWrite)
	if f != Ok {
		t.Fatalf("the kept memory: %v", f)
	}
	ref.Release()
	if s.Bytes() == nil {
		t.Fatal("the mapping went while a registration uses it")
	}
	if err := tb.Deregister(r); err != nil {
		t.Fatal(err)
	}
	<-r.Drained()
	if s.Bytes() != nil {
		t.Error("the mapping stayed after the last registration went")
	}
}
