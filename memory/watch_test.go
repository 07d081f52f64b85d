package memory

import "testing"

// landed reports whether c holds a signal, consuming it.
func landed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestWatchSignalsWrites(t *testing.T) {
	tb := newTable(t, Config{})
	mem := make([]byte, 64)
	r := mustRegister(t, tb, 1, mem, 0x100, LocalWrite|RemoteRead|RemoteWrite)
	other := mustRegister(t, tb, 1, make([]byte, 64), 0x100, LocalWrite|RemoteWrite)
	w := r.Watch()
	if r.Watch() != w {
		t.Fatal("a second Watch returned another channel")
	}
	if landed(w) {
		t.Fatal("signal before any write")
	}
	wr, f := tb.CheckRemote(1, 0, r.RKey(), 0x100, 8, RemoteWrite)
	if f != Ok {
		t.Fatal(f)
	}
	defer wr.Release()
	// Writes coalesce into one signal.
	wr.Write(0x100, []byte{1})
	wr.Write(0x101, []byte{2})
	if !landed(w) || landed(w) {
		t.Error("two writes: want exactly one signal")
	}
	// Reads, failed writes and another region's writes do not signal.
	rd, _ := tb.CheckRemote(1, 0, r.RKey(), 0x100, 8, RemoteRead)
	defer rd.Release()
	rd.Read(0x100, make([]byte, 4))
	if f := wr.Write(0x100+63, []byte{1, 2}); f != OutOfBounds {
		t.Fatalf("write past the end: %v", f)
	}
	ow, _ := tb.CheckRemote(1, 0, other.RKey(), 0x100, 8, RemoteWrite)
	defer ow.Release()
	ow.Write(0x100, []byte{3})
	if landed(w) {
		t.Error("signal without a write into the region")
	}
	// A local scatter is a write too.
	if f := tb.Scatter(1, []SGE{{Addr: 0x104, Length: 4, LKey: r.LKey()}}, []byte{9, 9, 9, 9}, 0); f != Ok {
		t.Fatal(f)
	}
	if !landed(w) {
		t.Error("a scatter into the region did not signal")
	}
}

// An unwatched region's writes cost nothing that allocates.
func TestWriteAllocatesNothing(t *testing.T) {
	tb := newTable(t, Config{})
	r := mustRegister(t, tb, 1, make([]byte, 64), 0, LocalWrite|RemoteWrite)
	wr, _ := tb.CheckRemote(1, 0, r.RKey(), 0, 8, RemoteWrite)
	defer wr.Release()
	src := []byte{1, 2, 3, 4}
	if n := testing.AllocsPerRun(100, func() { wr.Write(0, src) }); n != 0 {
		t.Errorf("unwatched: %v allocations per write", n)
	}
	r.Watch()
	if n := testing.AllocsPerRun(100, func() { wr.Write(0, src) }); n != 0 {
		t.Errorf("watched: %v allocations per write", n)
	}
}
