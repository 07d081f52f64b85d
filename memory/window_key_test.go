// Tests of binds named by keys, as a bind work request names them, and of
// the consumer's key byte.

package memory

import (
	"errors"
	"testing"
)

func TestBindByKey(t *testing.T) {
	tb := newTable(t, Config{})
	const pd, qpn = PD(1), uint32(7)
	mr := mustRegister(t, tb, pd, make([]byte, 4096), 0x10000, LocalWrite|MWBind)
	w, err := tb.AllocWindow(pd, Type2B)
	if err != nil {
		t.Fatal(err)
	}
	old := w.RKey()
	want := makeKey(KeyIndex(old), KeyByte(old)+1) // ibv_inc_rkey
	key, err := tb.BindByKey(pd, qpn, WindowBind{Window: old, MR: mr.LKey(), Addr: 0x10000, Length: 64, Access: RemoteWrite | LocalWrite, RKey: want})
	if err != nil {
		t.Fatalf("bind: %v", err)
	}
	if key != want || w.RKey() != want {
		t.Fatalf("rkey %#x (window %#x), the consumer asked for %#x", key, w.RKey(), want)
	}
	if _, f := tb.CheckRemote(pd, qpn, key, 0x10000, 64, RemoteWrite); f != Ok {
		t.Fatalf("write through the bound window: %v", f)
	}
	if _, f := tb.CheckRemote(pd, qpn, key, 0x10000, 64, RemoteRead); f != NoAccess {
		t.Fatalf("read through a write-only window: %v, want NoAccess", f)
	}
	// The old key names the window no more (rxe: mw_rkey must be current).
	if _, err := tb.BindByKey(pd, qpn, WindowBind{Window: old, MR: mr.LKey(), Addr: 0x10000, Length: 8, Access: RemoteRead}); err == nil {
		t.Fatal("bind through a stale window key succeeded")
	}
	if f := tb.Invalidate(pd, qpn, key); f != Ok {
		t.Fatalf("invalidate: %v", f)
	}
	// After invalidation the window is free for a bind by its last key.
	if _, err := tb.BindByKey(pd, qpn, WindowBind{Window: key, MR: mr.LKey(), Addr: 0x10000, Length: 8, Access: RemoteRead}); err != nil {
		t.Fatalf("re-bind after invalidation: %v", err)
	}
}

func TestBindByKeyBadKeys(t *testing.T) {
	tb := newTable(t, Config{})
	const pd = PD(1)
	mr := mustRegister(t, tb, pd, make([]byte, 4096), 0x10000, LocalWrite|MWBind)
	w, err := tb.AllocWindow(pd, Type1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		b    WindowBind
	}{
		{"MR key as window key", WindowBind{Window: mr.LKey(), MR: mr.LKey(), Addr: 0x10000, Length: 8, Access: RemoteRead}},
		{"window key as MR key", WindowBind{Window: w.RKey(), MR: w.RKey(), Addr: 0x10000, Length: 8, Access: RemoteRead}},
		{"key 0", WindowBind{Window: 0, MR: mr.LKey(), Addr: 0x10000, Length: 8, Access: RemoteRead}},
		{"wrong key byte", WindowBind{Window: w.RKey() ^ 1, MR: mr.LKey(), Addr: 0x10000, Length: 8, Access: RemoteRead}},
	} {
		if _, err := tb.BindByKey(pd, 0, c.b); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", c.name, err)
		}
	}
	// A Type 1 unbind needs no MR.
	if _, err := tb.BindByKey(pd, 0, WindowBind{Window: w.RKey()}); err != nil {
		t.Errorf("type 1 unbind: %v", err)
	}
	if err := tb.DeallocWindow(w); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.WindowByKey(w.RKey()); err == nil {
		t.Error("a deallocated window is still found by its key")
	}
}
