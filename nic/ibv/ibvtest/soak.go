// The soak: QPs created, used and destroyed by the thousand, and what the
// process holds (descriptors, mappings, goroutines, heap) back where it
// was. A leak per QP, CQ, MR or AH (a socket, a memfd mapping, a timer's
// goroutine, an engine's buffers) shows as thousands; the slack covers
// what a device legitimately keeps a while (pools, a few idle sockets).

package ibvtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// Usage is what the process holds.
type Usage struct {
	FDs, Maps, Goroutines int
	HeapBytes             uint64 // in use after a collection
}

func (u Usage) String() string {
	return fmt.Sprintf("%d fds, %d mappings, %d goroutines, %.1f MiB heap", u.FDs, u.Maps, u.Goroutines, float64(u.HeapBytes)/(1<<20))
}

// MeasureUsage collects garbage and counts what the process holds.
func MeasureUsage() Usage {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u := Usage{Goroutines: runtime.NumGoroutine(), HeapBytes: ms.HeapInuse}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		u.FDs = len(ents)
	}
	if b, err := os.ReadFile("/proc/self/maps"); err == nil {
		u.Maps = bytes.Count(b, []byte{'\n'})
	}
	return u
}

// SoakQPs is how many QPs a soak should make: 5000, or 500 under the race
// detector (still far beyond any slack).
var SoakQPs = map[bool]int{false: 5000, true: 500}[raceEnabled]

// Slack is how far above a baseline Usage may end.
var Slack = Usage{FDs: 24, Maps: 24, Goroutines: 16, HeapBytes: 16 << 20}

// Within reports whether u exceeds base by at most slack.
func (u Usage) Within(base, slack Usage) bool {
	return u.FDs <= base.FDs+slack.FDs && u.Maps <= base.Maps+slack.Maps &&
		u.Goroutines <= base.Goroutines+slack.Goroutines && u.HeapBytes <= base.HeapBytes+slack.HeapBytes
}

// Soak creates and destroys qps QPs on p (half on each side), RC and UD
// alternately, each pair with one message each way, checked byte for
// byte; every kitRounds pairs the CQs, buffers and MRs are made anew too
// (and a UD pair has its AHs). Then it checks that the process's Usage came
// back to what it was after a warm-up, within Slack (waiting up to a few
// seconds for asynchronous teardown).
func Soak(t *testing.T, p Pair, qps int) {
	a, b := newSides(t, p)
	const warmup = 32
	rounds(t, a, b, 0, warmup)
	base := MeasureUsage()
	start := time.Now()
	rounds(t, a, b, warmup, warmup+qps/2)
	t.Logf("%d QPs created, used and destroyed in %v", qps, time.Since(start).Round(time.Millisecond))
	var now Usage
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if now = MeasureUsage(); now.Within(base, Slack) || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("before: %v; after: %v", base, now)
	if !now.Within(base, Slack) {
		t.Errorf("resources did not return to their baseline:\n before %v\n after  %v\n slack  %v", base, now, Slack)
		dumpFDs(t)
	}
}

// kitRounds is how many QP pairs share one CQ, buffer and MR per side.
const kitRounds = 8

// rounds runs QP pairs from..to-1, with kits made and destroyed as they go.
func rounds(t *testing.T, a, b *side, from, to int) {
	t.Helper()
	var ka, kb *soakKit
	for i := from; i < to; i++ {
		if (i-from)%kitRounds == 0 {
			ka.destroy(t)
			kb.destroy(t)
			ka, kb = newSoakKit(t, a), newSoakKit(t, b)
		}
		soakRound(t, a, b, ka, kb, i)
	}
	ka.destroy(t)
	kb.destroy(t)
}

// soakRound is one pair of QPs from creation to destruction.
func soakRound(t *testing.T, a, b *side, ka, kb *soakKit, i int) {
	t.Helper()
	typ := verbs.QPTypeRC
	if i%2 == 1 {
		typ = verbs.QPTypeUD
	}
	ea, eb := newSoakEnd(t, a, ka, typ), newSoakEnd(t, b, kb, typ)
	defer ea.destroy(t)
	defer eb.destroy(t)
	if typ == verbs.QPTypeRC {
		connectRC(t, a, ea.qp, b, eb.qp)
	} else {
		a.toRTSUD(t, ea.qp)
		b.toRTSUD(t, eb.qp)
		ea.aimUD(t, a, b, eb.qp)
		eb.aimUD(t, b, a, ea.qp)
	}
	ea.exchange(t, eb, i)
	eb.exchange(t, ea, i+1)
}

// soakKit is one side's CQ and registered buffer, shared by a few rounds.
type soakKit struct {
	cq  ibv.CQ
	buf ibv.Buffer
	mr  ibv.MR
}

func newSoakKit(t *testing.T, s *side) *soakKit {
	t.Helper()
	k := &soakKit{}
	var err error
	if k.cq, err = s.dev.CreateCQ(16); err != nil {
		t.Fatalf("CreateCQ: %v", err)
	}
	if k.buf, err = s.dev.AllocBuffer(2 * soakRecvOff); err != nil {
		t.Fatalf("AllocBuffer: %v", err)
	}
	if k.mr, err = s.dev.RegMR(s.pd, k.buf.Bytes(), memory.LocalWrite); err != nil {
		t.Fatalf("RegMR: %v", err)
	}
	return k
}

// destroy destroys the kit's objects (nothing for a nil kit).
func (k *soakKit) destroy(t *testing.T) {
	t.Helper()
	if k == nil {
		return
	}
	for _, f := range []struct {
		what string
		do   func() error
	}{{"destroy CQ", k.cq.Destroy}, {"dereg MR", k.mr.Dereg}, {"close buffer", k.buf.Close}} {
		if err := f.do(); err != nil {
			t.Fatalf("%s: %v", f.what, err)
		}
	}
}

// soakEnd is one side's QP of one round, on a kit.
type soakEnd struct {
	*soakKit
	dev  ibv.Device
	qp   ibv.QP
	ah   ibv.AH
	peer uint32 // the peer QP's number (UD)
}

// soakLen is each round's message; soakRecvOff where it lands (after the
// GRH area a UD receive starts with).
const (
	soakLen     = 256
	soakRecvOff = 4096
)

func newSoakEnd(t *testing.T, s *side, k *soakKit, typ verbs.QPType) *soakEnd {
	t.Helper()
	e := &soakEnd{soakKit: k, dev: s.dev}
	var err error
	e.qp, err = s.dev.CreateQP(s.pd, ibv.QPInit{Type: typ, SendCQ: e.cq, RecvCQ: e.cq,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatalf("CreateQP(%v): %v", typ, err)
	}
	return e
}

// aimUD gives a UD end an address handle toward peer's QP.
func (e *soakEnd) aimUD(t *testing.T, s, peer *side, peerQP ibv.QP) {
	t.Helper()
	var err error
	if e.ah, err = s.dev.CreateAH(s.pd, s.av(peer)); err != nil {
		t.Fatalf("CreateAH: %v", err)
	}
	e.peer = peerQP.QPN()
}

// exchange sends one message from e to peer and checks it arrived.
func (e *soakEnd) exchange(t *testing.T, peer *soakEnd, seed int) {
	t.Helper()
	off := soakRecvOff
	if peer.qp.Type() == verbs.QPTypeUD {
		off -= grhLen
	}
	sge := verbs.SGE{Addr: peer.mr.Addr() + uint64(off), Length: uint32(soakRecvOff - off + soakLen), LKey: peer.mr.LKey()}
	if err := peer.qp.PostRecv(&verbs.RecvWR{ID: 2, SGL: []verbs.SGE{sge}}); err != nil {
		t.Fatalf("PostRecv: %v", err)
	}
	mem := e.buf.Bytes()
	fill(mem[:soakLen], seed)
	wr := &verbs.SendWR{ID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: e.mr.Addr(), Length: soakLen, LKey: e.mr.LKey()}}}
	if e.ah != nil {
		wr.AH, wr.RemoteQPN, wr.RemoteQKey = e.ah.AV(), e.peer, qkey
	}
	if err := e.qp.PostSend(wr); err != nil {
		t.Fatalf("PostSend: %v", err)
	}
	checkWC(t, "soak send", waitOne(t, e.cq), 1, verbs.WCSuccess, verbs.WCSend)
	checkWC(t, "soak receive", waitOne(t, peer.cq), 2, verbs.WCSuccess, verbs.WCRecv)
	checkBytes(t, "soak message", peer.buf.Bytes()[soakRecvOff:soakRecvOff+soakLen], pattern(soakLen, seed))
}

// destroy destroys the end's QP and AH.
func (e *soakEnd) destroy(t *testing.T) {
	t.Helper()
	if err := e.qp.Destroy(); err != nil {
		t.Fatalf("destroy QP: %v", err)
	}
	if err := e.destroyAH(); err != nil {
		t.Fatalf("destroy AH: %v", err)
	}
}

func (e *soakEnd) destroyAH() error {
	if e.ah == nil {
		return nil
	}
	return e.ah.Destroy()
}

// dumpFDs logs what the process's descriptors point at, to name a leak.
func dumpFDs(t *testing.T) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	kinds := map[string]int{}
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue
		}
		if i := bytes.IndexByte([]byte(l), ':'); i > 0 {
			l = l[:i]
		}
		kinds[l]++
	}
	var sb bytes.Buffer
	w := bufio.NewWriter(&sb)
	for k, n := range kinds {
		fmt.Fprintf(w, " %s×%d", k, n)
	}
	w.Flush()
	t.Logf("descriptors:%s", sb.String())
}
