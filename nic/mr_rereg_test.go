package nic

import (
	"testing"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// TestReregMR: the keys stay; a PD change moves the MR's hold from one PD
// to the other; a translation change moves its addresses; a refused or
// dead MR is left as it was.
func TestReregMR(t *testing.T) {
	f := newFixture(t)
	pd2, err := f.d.AllocPD()
	wantIs(t, "AllocPD", err, nil)
	mr, err := f.d.RegMR(f.pd, make([]byte, 64), memory.LocalWrite)
	wantIs(t, "RegMR", err, nil)
	key := mr.LKey()

	wantIs(t, "ReregMR to pd2", f.d.ReregMR(mr, MRChange{PD: pd2, Access: memory.LocalWrite | memory.RemoteWrite}), nil)
	if mr.PD() != pd2 || mr.LKey() != key || mr.RKey() != key || mr.Access() != memory.LocalWrite|memory.RemoteWrite {
		t.Fatalf("after rereg: pd %v key %#x (was %#x) access %v", mr.PD() == pd2, mr.LKey(), key, mr.Access())
	}
	wantIs(t, "DeallocPD of pd2, which the MR now uses", f.d.DeallocPD(pd2), verbs.ErrBusy)

	buf := make([]byte, 32)
	wantIs(t, "ReregMR translation, back to the first PD", f.d.ReregMR(mr, MRChange{PD: f.pd, Buf: buf, IOVA: 0x7000, Access: memory.LocalWrite}), nil)
	if mr.Addr() != 0x7000 || mr.Len() != 32 || mr.LKey() != key {
		t.Errorf("after a translation change: addr %#x len %d key %#x", mr.Addr(), mr.Len(), mr.LKey())
	}
	wantIs(t, "DeallocPD of pd2, no longer used", f.d.DeallocPD(pd2), nil)
	wantIs(t, "ReregMR to a deallocated PD", f.d.ReregMR(mr, MRChange{PD: pd2, Access: memory.LocalWrite}), verbs.ErrDestroyed)
	wantIs(t, "ReregMR with remote write but no local write", f.d.ReregMR(mr, MRChange{Access: memory.RemoteWrite}), verbs.ErrInvalid)
	if mr.PD() != f.pd || mr.Access() != memory.LocalWrite || mr.Addr() != 0x7000 {
		t.Errorf("a refused rereg changed the MR")
	}
	wantIs(t, "ReregMR keeping the memory", f.d.ReregMR(mr, MRChange{Access: memory.LocalWrite | memory.RemoteRead}), nil)
	if mr.Addr() != 0x7000 || mr.Len() != 32 {
		t.Errorf("keeping the memory moved it: addr %#x len %d", mr.Addr(), mr.Len())
	}
	wantIs(t, "DeregMR", f.d.DeregMR(mr), nil)
	wantIs(t, "ReregMR of a deregistered MR", f.d.ReregMR(mr, MRChange{Access: memory.LocalWrite}), verbs.ErrDestroyed)
}
