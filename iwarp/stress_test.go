package iwarp

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

// TestRandomWorkload runs random SENDs, WRITEs and READs (into up to four
// sink SGEs) both ways over
// streams that split and coalesce at random points, with a small send
// buffer so that backpressure engages, and checks every byte.
func TestRandomWorkload(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		o := defaultOpts()
		o.sim.Chop, o.sim.Seed = 0.5, seed
		o.sim.SendBuffer = 16 << 10
		o.sqDepth = 64
		if seed%2 == 1 {
			o.ird, o.ord = 3, 3 // multi-SGE READs wait for ORD
		}
		if seed%2 == 0 {
			o.a.NoCRC, o.b.NoCRC = true, true
		}
		if seed%3 == 0 {
			o.a.Markers, o.b.Markers = true, true
		}
		h := newHarness(t, o)
		if h.result == nil || h.result.Err != nil {
			t.Fatalf("connect: %+v", h.result)
		}
		rng := rand.New(rand.NewPCG(seed, 99))
		type check struct {
			dst  []byte
			want []byte
		}
		var checks []check
		const region = 64 << 10 // each op uses its own slot of the buffers
		slot := 0
		nextSlot := func() int { s := slot; slot = (slot + 1) % (bufSize / region / 2); return s * region * 2 }
		wantSend := map[*node]int{}
		wantRecv := map[*node]int{}
		for i := range 300 {
			src, dst := h.a, h.b
			if rng.IntN(2) == 1 {
				src, dst = h.b, h.a
			}
			n := rng.IntN(40000)
			if rng.IntN(4) == 0 {
				n = rng.IntN(64)
			}
			off := nextSlot()
			fill(src.buf[off:off+n], byte(i))
			switch rng.IntN(3) {
			case 0:
				dst.recv(uint64(i), off+region, n)
				src.post(t, verbs.SendWR{ID: uint64(i), Opcode: verbs.WRSend, SGL: []verbs.SGE{src.sge(off, n)}})
				checks = append(checks, check{dst.buf[off+region : off+region+n], src.buf[off : off+n]})
				wantRecv[dst]++
			case 1:
				src.post(t, verbs.SendWR{ID: uint64(i), Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{src.sge(off, n)}, RemoteAddr: dst.va(off + region), RKey: dst.mr.RKey()})
				checks = append(checks, check{dst.buf[off+region : off+region+n], src.buf[off : off+n]})
			case 2:
				// src reads dst[off:off+n] into src[off+region:], through
				// 1 to 4 sink SGEs cut at random points (some may be
				// empty): one Read Request each.
				fill(dst.buf[off:off+n], byte(i)+100)
				cuts := []int{0, n}
				for range rng.IntN(4) {
					cuts = append(cuts, rng.IntN(n+1))
				}
				slices.Sort(cuts)
				var sgl []verbs.SGE
				for k := 1; k < len(cuts); k++ {
					sgl = append(sgl, src.sge(off+region+cuts[k-1], cuts[k]-cuts[k-1]))
				}
				src.post(t, verbs.SendWR{ID: uint64(i), Opcode: verbs.WRRDMARead, SGL: sgl, RemoteAddr: dst.va(off), RKey: dst.mr.RKey()})
				checks = append(checks, check{src.buf[off+region : off+region+n], dst.buf[off : off+n]})
			}
			wantSend[src]++
			if rng.IntN(8) == 0 || slot == 0 || i == 299 { // slots are reused after a run
				h.run()
				for _, nd := range []*node{h.a, h.b} {
					for _, wc := range nd.scq.take() {
						if wc.Status != verbs.WCSuccess {
							h.dumpTrace()
							t.Fatalf("seed %d: %s send WC %+v", seed, nd.name, wc)
						}
						wantSend[nd]--
					}
					for _, wc := range nd.rcq.take() {
						if wc.Status != verbs.WCSuccess {
							t.Fatalf("seed %d: %s recv WC %+v", seed, nd.name, wc)
						}
						wantRecv[nd]--
					}
				}
				for j, c := range checks {
					if !bytes.Equal(c.dst, c.want) {
						t.Fatalf("seed %d: check %d: data mismatch", seed, j)
					}
				}
				checks = checks[:0]
			}
		}
		for nd, n := range wantSend {
			if n != 0 {
				t.Fatalf("seed %d: %s: %d send completions missing", seed, nd.name, n)
			}
		}
		for nd, n := range wantRecv {
			if n != 0 {
				t.Fatalf("seed %d: %s: %d receive completions missing", seed, nd.name, n)
			}
		}
		h.wantState(h.a, verbs.QPSRTS)
		h.wantState(h.b, verbs.QPSRTS)
		if h.a.stack.ctr.Get(WouldBlock)+h.b.stack.ctr.Get(WouldBlock) == 0 {
			t.Fatalf("seed %d: backpressure never engaged", seed)
		}
	}
}
