// Tests of Shared memory: memfd mapping, mapping by fd (in this process and
// in a child process), the sealing requirement, and unmapping deferred while
// regions and in-flight DMAs use the memory.

//go:build linux

package memory

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestSharedMapping(t *testing.T) {
	s := mustShared(t, 8192)
	if s.Len() != 8192 || len(s.Bytes()) != 8192 || s.Fd() < 0 {
		t.Fatalf("len %d bytes %d fd %d", s.Len(), len(s.Bytes()), s.Fd())
	}
	m, err := MapShared(s.Fd(), 8192)
	if err != nil {
		t.Fatal(err)
	}
	s.Bytes()[100] = 42
	if m.Bytes()[100] != 42 {
		t.Error("second mapping does not see the first's write")
	}
	if m.Fd() == s.Fd() {
		t.Error("MapShared did not duplicate the fd")
	}
	smaller, err := MapShared(s.Fd(), 4096) // a prefix is fine
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Shared{m, smaller, s} {
		if err := x.Close(); err != nil {
			t.Error(err)
		}
	}
	wantErr(t, "close twice", s.Close(), ErrClosed)
	if s.Bytes() != nil || s.Fd() != -1 {
		t.Error("closed shared still exposes memory")
	}
	_, err = NewShared(0)
	wantErr(t, "NewShared(0)", err, ErrInvalidArgument)
}

func TestMapSharedRefuses(t *testing.T) {
	// A memfd without seals.
	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 4096); err != nil {
		t.Fatal(err)
	}
	_, err = MapShared(fd, 4096)
	wantErr(t, "unsealed memfd", err, ErrNotSealed)
	// A regular file cannot be sealed.
	f, err := os.CreateTemp(t.TempDir(), "mr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Truncate(4096)
	_, err = MapShared(int(f.Fd()), 4096)
	wantErr(t, "regular file", err, ErrNotSealed)
	// Too short, and bad sizes.
	s := mustShared(t, 4096)
	defer s.Close()
	_, err = MapShared(s.Fd(), 8192)
	wantErr(t, "longer than the file", err, ErrInvalidArgument)
	_, err = MapShared(s.Fd(), 0)
	wantErr(t, "size 0", err, ErrInvalidArgument)
	// The seal holds: the file cannot shrink under a mapping.
	if err := unix.Ftruncate(s.Fd(), 1024); err == nil {
		t.Error("sealed memfd shrank")
	}
}

func TestSharedDeregisterWhileInUse(t *testing.T) {
	s := mustShared(t, 4096)
	tb := newTable(t, Config{})
	r := mustRegister(t, tb, 1, s.Bytes()[1024:2048], 0x1000, LocalWrite|RemoteWrite|RemoteRead)
	ref, f := tb.CheckRemote(1, 0, r.RKey(), 0x1000, 1024, RemoteWrite)
	if f != Ok {
		t.Fatal(f)
	}
	// The owner closes the memory and the region goes while a DMA is in
	// flight: the key dies, the mapping stays.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tb.Deregister(r); err != nil {
		t.Fatal(err)
	}
	if _, f := tb.CheckRemote(1, 0, r.RKey(), 0x1000, 1, RemoteWrite); f != BadKey {
		t.Errorf("key after deregister: %v", f)
	}
	if s.unmapped.Load() {
		t.Fatal("unmapped while a DMA holds the memory")
	}
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = byte(i)
	}
	if f := ref.Write(0x1000, payload); f != Ok { // would SIGSEGV if unmapped
		t.Fatalf("in-flight write: %v", f)
	}
	if s.mem[1024+5] != 5 {
		t.Error("write did not land")
	}
	ref.Release()
	<-r.Drained()
	if !s.unmapped.Load() || s.refs.Load() != 0 {
		t.Errorf("not unmapped after the last release (refs %d)", s.refs.Load())
	}
}

func TestSharedCloseAndRegister(t *testing.T) {
	s := mustShared(t, 4096)
	tb := newTable(t, Config{})
	mem := s.Bytes()
	r1 := mustRegister(t, tb, 1, mem[:100], 0, 0)
	r2 := mustRegister(t, tb, 1, mem[100:], 0, 0)
	if n := s.refs.Load(); n != 3 {
		t.Errorf("refs %d, want 3", n)
	}
	r3 := mustRegister(t, tb, 1, mem[4000:4096:4096], 0, 0)
	// A slice reaching past the mapping is refused (never touched).
	_, err := tb.Register(1, unsafe.Slice(&mem[4000], 200), 0, 0)
	wantErr(t, "straddling slice", err, ErrInvalidArgument)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = tb.Register(1, mem[:8], 0, 0)
	wantErr(t, "register closed shared", err, ErrClosed)
	for _, r := range []*Region{r1, r2, r3} {
		if s.unmapped.Load() {
			t.Fatal("unmapped with a region left")
		}
		if err := tb.Deregister(r); err != nil {
			t.Fatal(err)
		}
	}
	if !s.unmapped.Load() {
		t.Error("not unmapped after the last region")
	}
	// Registration limits release the pin they took.
	s2 := mustShared(t, 4096)
	tl := newTable(t, Config{MaxRegions: 1})
	mustRegister(t, tl, 1, make([]byte, 8), 0, 0)
	_, err = tl.Register(1, s2.Bytes(), 0, 0)
	wantErr(t, "limit", err, ErrNoResources)
	if n := s2.refs.Load(); n != 1 {
		t.Errorf("refs %d after failed register", n)
	}
	s2.Close()
}

// TestSharedConcurrentDeregister races DMAs against deregistration and
// Close of shared memory: no copy may fault, and the memory is unmapped
// exactly once at the end.
func TestSharedConcurrentDeregister(t *testing.T) {
	tb := newTable(t, Config{})
	for round := 0; round < 50; round++ {
		s := mustShared(t, 1<<16)
		r := mustRegister(t, tb, 1, s.Bytes(), 0, LocalWrite|RemoteRead|RemoteWrite)
		key := r.RKey()
		var wg, started sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			started.Add(1)
			go func() {
				defer wg.Done()
				begun := sync.OnceFunc(started.Done)
				defer begun()
				buf := make([]byte, 4096)
				for i := 0; ; i++ {
					if i == 8 {
						begun()
					}
					ref, f := tb.CheckRemote(1, 0, key, uint64(i%16)*4096, 4096, RemoteRead|RemoteWrite)
					if f == BadKey {
						return
					}
					if f != Ok {
						t.Errorf("check: %v", f)
						return
					}
					if f := ref.Read(uint64(i%16)*4096, buf); f != Ok {
						t.Errorf("read: %v", f)
					}
					ref.Write(uint64(i%16)*4096, buf)
					ref.Release()
				}
			}()
		}
		started.Wait() // every worker is copying
		s.Close()
		tb.Deregister(r)
		wg.Wait()
		<-r.Drained()
		if !s.unmapped.Load() {
			t.Fatal("not unmapped")
		}
	}
}

// TestSharedCrossProcess: a child process maps the memfd and does atomics on
// the same word as the parent; no increment is lost.
func TestSharedCrossProcess(t *testing.T) {
	const n = 20000
	if os.Getenv("RNIC_MEMORY_CHILD") == "1" {
		s, err := MapShared(3, 4096)
		if err != nil {
			t.Fatal(err)
		}
		tb := newTable(t, Config{})
		r := mustRegister(t, tb, 1, s.Bytes(), 0, LocalWrite|RemoteAtomic)
		for i := 0; i < n; i++ {
			ref, f := tb.CheckRemote(1, 0, r.RKey(), 64, 8, RemoteAtomic)
			if f != Ok {
				t.Fatal(f)
			}
			ref.FetchAdd(64, 1)
			ref.Release()
		}
		return
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	s := mustShared(t, 4096)
	defer s.Close()
	tb := newTable(t, Config{})
	r := mustRegister(t, tb, 1, s.Bytes(), 0, LocalWrite|RemoteAtomic)
	defer tb.Deregister(r)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedCrossProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RNIC_MEMORY_CHILD=1")
	dup, err := unix.Dup(s.Fd())
	if err != nil {
		t.Fatal(err)
	}
	child := os.NewFile(uintptr(dup), "memfd")
	defer child.Close()
	cmd.ExtraFiles = []*os.File{child}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		ref, f := tb.CheckRemote(1, 0, r.RKey(), 64, 8, RemoteAtomic)
		if f != Ok {
			t.Fatal(f)
		}
		ref.FetchAdd(64, 1)
		ref.Release()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	ref, _ := tb.CheckRemote(1, 0, r.RKey(), 64, 8, RemoteAtomic)
	got, _ := ref.FetchAdd(64, 0)
	ref.Release()
	if got != 2*n {
		t.Errorf("counter %d, want %d", got, 2*n)
	}
}

// A sealed hugetlbfs memfd is refused: a hole punched in it is refilled
// from the huge page pool, and with the pool empty the mapper's next
// access raises SIGBUS (it killed rnicd on an RDMA WRITE).
func TestMapSharedRefusesHugetlb(t *testing.T) {
	fd, err := unix.MemfdCreate("huge", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_HUGETLB)
	if err != nil {
		t.Skipf("no hugetlbfs memfd on this kernel (%v): nothing to refuse", err)
	}
	defer unix.Close(fd)
	const size = 2 << 20
	if err := unix.Ftruncate(fd, size); err != nil {
		t.Skipf("hugetlbfs memfd cannot be sized (%v)", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK); err != nil {
		t.Skipf("hugetlbfs memfd cannot be sealed on this kernel (%v): MapShared refuses it unsealed", err)
	}
	_, err = MapShared(fd, size)
	wantErr(t, "hugetlb memfd", err, ErrBacking)
	_, err = MapSharedWindow(fd, 0, size)
	wantErr(t, "hugetlb memfd window", err, ErrBacking)
}
