package client_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/verbs"
)

// ringMappings counts the process's mappings of ring memfds (daemon and
// client alike: the daemon runs in the test).
func ringMappings(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	return strings.Count(string(b), "memfd:rnic-mr")
}

// backingOf returns the file (inode) and file offset behind address p, as
// /proc/self/maps says.
func backingOf(t *testing.T, p unsafe.Pointer) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	a := uint64(uintptr(p))
	for _, line := range strings.Split(string(b), "\n") {
		var start, end, off uint64
		var perms, dev string
		var inode uint64
		if n, _ := fmt.Sscanf(line, "%x-%x %s %x %s %d", &start, &end, &perms, &off, &dev, &inode); n == 6 && start <= a && a < end {
			return fmt.Sprintf("inode %d offset %#x", inode, off+a-start)
		}
	}
	t.Fatalf("%p is in no mapping", p)
	return ""
}

func smallQP(t *testing.T, dev ibv.Device, pd ibv.PD, cq ibv.CQ) ibv.QP {
	t.Helper()
	return qpOf(t, dev, pd, cq, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1})
}

func qpOf(t *testing.T, dev ibv.Device, pd ibv.PD, cq ibv.CQ, cap verbs.QPCap) ibv.QP {
	t.Helper()
	qp, err := dev.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: cap})
	if err != nil {
		t.Fatal(err)
	}
	return qp
}

// Many QPs and CQs of one session map a bounded number of areas: their
// rings are slots of a few arena chunks, each mapped once by the daemon
// and once by the client. Before the arena each ring was a memfd mapped
// on both sides: 2 mappings per object.
func TestArenaBoundsMappings(t *testing.T) {
	const qps, cqs = 300, 30
	d := rnicdtest.Start(t, rnicdtest.Options{Limits: server.Limits{MaxQPs: qps}})
	dev := open(t, d, 0)
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	before := ringMappings(t)
	var cq ibv.CQ
	for i := range qps {
		if i%(qps/cqs) == 0 {
			if cq, err = dev.CreateCQ(16); err != nil {
				t.Fatal(err)
			}
		}
		smallQP(t, dev, pd, cq)
	}
	// A page each: 330 objects fit one chunk; allow a second.
	grown := ringMappings(t) - before
	t.Logf("%d QPs and %d CQs: %d ring mappings (daemon and client)", qps, cqs, grown)
	if grown > 4 {
		t.Errorf("%d QPs and %d CQs took %d ring mappings, want at most 4 (two chunks, two sides)", qps, cqs, grown)
	}
}

// A destroyed QP's slot goes to the next QP of its size, and the new QP's
// rings start clean: state RESET, indices zero, no WQE bytes of the old
// one, whatever the client left there. Small slots are written over,
// large ones (128 KiB here) punched out of the memfd.
func TestArenaReusedSlotStartsClean(t *testing.T) {
	for _, cap := range []verbs.QPCap{
		{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1},
		{MaxSendWR: 256, MaxRecvWR: 256, MaxSendSGE: 4, MaxRecvSGE: 4},
	} {
		t.Run(fmt.Sprintf("%dWRs", cap.MaxSendWR), func(t *testing.T) { reusedSlotStartsClean(t, cap) })
	}
}

func reusedSlotStartsClean(t *testing.T, cap verbs.QPCap) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	dev := open(t, d, 0)
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.CreateCQ(16)
	if err != nil {
		t.Fatal(err)
	}
	old := qpOf(t, dev, pd, cq, cap)
	if err := old.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	rings, _ := client.QPRings(old)
	if st := verbs.QPState(rings.State.Load()); st != verbs.QPSInit {
		t.Fatalf("old QP's rings say %v, want INIT", st)
	}
	oldAt := unsafe.Pointer(rings.SQ.Prod)
	oldBacking := backingOf(t, oldAt)
	// What a client leaves behind: WQE bytes and a producer index
	// (without ringing: the drainer needs not see it).
	for i := range rings.SQ.Slots() {
		copy(rings.SQ.Slot(i), bytes.Repeat([]byte{0xA5}, int(rings.SQ.SlotSize())))
	}
	for i := range rings.RQ.Slots() {
		copy(rings.RQ.Slot(i), bytes.Repeat([]byte{0x5A}, int(rings.RQ.SlotSize())))
	}
	rings.SQ.Prod.Store(3)
	rings.RQ.Prod.Store(2)
	if err := old.Destroy(); err != nil {
		t.Fatal(err)
	}
	qp := qpOf(t, dev, pd, cq, cap)
	rings, _ = client.QPRings(qp)
	if at, backing := unsafe.Pointer(rings.SQ.Prod), backingOf(t, unsafe.Pointer(rings.SQ.Prod)); at != oldAt || backing != oldBacking {
		t.Fatalf("the new QP's rings are at %p (%s), not in the destroyed QP's slot at %p (%s)", at, backing, oldAt, oldBacking)
	}
	if st := verbs.QPState(rings.State.Load()); st != verbs.QPSReset {
		t.Errorf("reused slot's rings say %v, want RESET", st)
	}
	for name, v := range map[string]uint32{"SQ producer": rings.SQ.Prod.Load(), "RQ producer": rings.RQ.Prod.Load(),
		"SQ consumer": rings.SQ.Cons.Load(), "RQ consumer": rings.RQ.Cons.Load(), "RQ done": rings.RQDone.Load()} {
		if v != 0 {
			t.Errorf("reused slot's %s is %d, want 0", name, v)
		}
	}
	for i := range rings.SQ.Slots() {
		if s := rings.SQ.Slot(i); !bytes.Equal(s, make([]byte, len(s))) {
			t.Fatalf("reused slot's send WQE %d holds % x...", i, s[:8])
		}
	}
	for i := range rings.RQ.Slots() {
		if s := rings.RQ.Slot(i); !bytes.Equal(s, make([]byte, len(s))) {
			t.Fatalf("reused slot's receive WQE %d holds % x...", i, s[:8])
		}
	}
}

// A client that missed a chunk's memfd (its descriptors were lost at its
// limit, say) fetches it with RING_CHUNK when a later reply names the chunk
// without it, and the object works.
func TestArenaFetchesMissedChunk(t *testing.T) {
	d := rnicdtest.Start(t, rnicdtest.Options{})
	dev := open(t, d, 0)
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.CreateCQ(16)
	if err != nil {
		t.Fatal(err)
	}
	if n := client.ForgetChunks(dev); n != 1 {
		t.Fatalf("the client had %d chunks mapped, want 1", n)
	}
	qp := smallQP(t, dev, pd, cq)
	rings, _ := client.QPRings(qp)
	if got, want := backingOf(t, unsafe.Pointer(rings.SQ.Prod)), backingOf(t, unsafe.Pointer(client.CQRing(cq).Prod)); !strings.HasPrefix(got, strings.Fields(want)[0]+" "+strings.Fields(want)[1]+" ") {
		t.Errorf("the QP's rings are in %s, the CQ's in %s: want the same chunk", got, want)
	}
	if err := qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	if st := verbs.QPState(rings.State.Load()); st != verbs.QPSInit {
		t.Errorf("the QP's rings say %v, want INIT", st)
	}
}
