package roce

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

// TestRandomLossyWorkload drives a random mix of SEND, WRITE, READ and
// atomics in both directions over a link that loses, reorders, duplicates
// and corrupts frames, and checks every completion, every byte and every
// atomic result against a sequential reference model (RC executes each
// QP's requests in order, so the model is exact). The last run has a
// stack budget of 4 KiB (budget.go), less than most READs take, which
// every retry, RNR wait and implied NAK must leave as it found it.
func TestRandomLossyWorkload(t *testing.T) {
	runs := []struct {
		seed   uint64
		budget int
	}{{1, 0}, {2, 0}, {3, 0}, {4, 4 << 10}}
	if testing.Short() {
		runs = []struct {
			seed   uint64
			budget int
		}{runs[0], runs[3]}
	}
	for _, run := range runs {
		seed := run.seed
		o := defaultOpts()
		o.seed = seed
		o.budget = run.budget
		o.timeout = 8 // 1 ms: keeps virtual time short
		o.minRNRTimer = 1
		o.faults = transport.Symmetric(transport.Faults{Loss: 0.1, Reorder: 0.1, Dup: 0.02, Corrupt: 0.01})
		h := newHarness(t, o)
		rng := rand.New(rand.NewPCG(seed, 99))
		type pending struct {
			id    uint64
			op    verbs.WROpcode
			check func() bool
		}
		var want []pending
		var wantRecv []uint64
		a, b := h.a, h.b
		// Layout of each node's buffer: [0,256K) source data, [256K,512K)
		// READ sinks, [512K,768K) WRITE targets (per op slot), [768K,...)
		// receive buffers; atomic words at 1M-4K.
		fill(a.buf[:256<<10], byte(seed))
		fill(b.buf[:256<<10], byte(seed+100))
		atomicVal := uint64(0)
		binary.NativeEndian.PutUint64(b.buf[bufSize-4096:], 0)
		const ops = 400
		for i := 0; i < ops; i++ {
			id := uint64(i + 1)
			n := rng.IntN(9000)
			src := rng.IntN(256<<10 - n)
			slot := i % 24 // batches of 24: no slot is reused within one
			switch k := rng.IntN(5); k {
			case 0: // SEND
				roff := 768<<10 + slot*9216
				b.recv(id, roff, 9216)
				a.post(t, verbs.SendWR{ID: id, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(src, n)}})
				wantRecv = append(wantRecv, id)
				exp := append([]byte(nil), a.buf[src:src+n]...)
				want = append(want, pending{id: id, op: verbs.WRSend, check: func() bool { return bytes.Equal(b.buf[roff:roff+n], exp) }})
			case 1: // WRITE
				dst := 512<<10 + slot*8192
				n = min(n, 8192)
				a.post(t, verbs.SendWR{ID: id, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(src, n)}, RemoteAddr: b.va(dst), RKey: b.mr.RKey()})
				exp := append([]byte(nil), a.buf[src:src+n]...)
				want = append(want, pending{id: id, op: verbs.WRRDMAWrite, check: func() bool { return bytes.Equal(b.buf[dst:dst+n], exp) }})
			case 2: // READ
				dst := 256<<10 + slot*8192
				n = min(n, 8192)
				a.post(t, verbs.SendWR{ID: id, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(dst, n)}, RemoteAddr: b.va(src), RKey: b.mr.RKey()})
				exp := append([]byte(nil), b.buf[src:src+n]...)
				want = append(want, pending{id: id, op: verbs.WRRDMARead, check: func() bool { return bytes.Equal(a.buf[dst:dst+n], exp) }})
			case 3: // FetchAdd
				add := rng.Uint64() >> 8
				dst := 0xF0000 + slot*8
				orig := atomicVal
				atomicVal += add
				a.post(t, verbs.SendWR{ID: id, Opcode: verbs.WRAtomicFetchAdd, SGL: []verbs.SGE{a.sge(dst, 8)}, RemoteAddr: b.va(bufSize - 4096), RKey: b.mr.RKey(), CompareAdd: add})
				want = append(want, pending{id: id, op: verbs.WRAtomicFetchAdd, check: func() bool { return binary.NativeEndian.Uint64(a.buf[dst:]) == orig }})
			case 4: // CmpSwap that succeeds only if the model says so
				dst := 0xF8000 + slot*8
				cmp := atomicVal
				if rng.IntN(2) == 0 {
					cmp++
				}
				swap := rng.Uint64()
				orig := atomicVal
				if cmp == atomicVal {
					atomicVal = swap
				}
				a.post(t, verbs.SendWR{ID: id, Opcode: verbs.WRAtomicCmpSwp, SGL: []verbs.SGE{a.sge(dst, 8)}, RemoteAddr: b.va(bufSize - 4096), RKey: b.mr.RKey(), CompareAdd: cmp, Swap: swap})
				want = append(want, pending{id: id, op: verbs.WRAtomicCmpSwp, check: func() bool { return binary.NativeEndian.Uint64(a.buf[dst:]) == orig }})
			}
			// Let the queue drain now and then so the send queue never
			// overflows and checks of reused slots stay valid.
			if len(want) == 24 || i == ops-1 {
				h.run()
				got := a.scq.take()
				if len(got) != len(want) {
					t.Fatalf("seed %d: %d completions, want %d\n%v", seed, len(got), len(want), got)
				}
				for j, w := range want {
					if got[j].WRID != w.id || got[j].Status != verbs.WCSuccess || got[j].Opcode != w.op.CompletionOpcode() {
						t.Fatalf("seed %d: completion %d = %+v, want wrid %d %v success", seed, j, got[j], w.id, w.op)
					}
					if !w.check() {
						t.Fatalf("seed %d: wrid %d (%v): data or result differs", seed, w.id, w.op)
					}
				}
				want = want[:0]
				rc := b.rcq.take()
				if len(rc) != len(wantRecv) {
					t.Fatalf("seed %d: %d receive completions, want %d", seed, len(rc), len(wantRecv))
				}
				for j := range rc {
					if rc[j].WRID != wantRecv[j] || rc[j].Status != verbs.WCSuccess {
						t.Fatalf("seed %d: receive %d = %+v", seed, j, rc[j])
					}
				}
				wantRecv = wantRecv[:0]
			}
		}
		if v := binary.NativeEndian.Uint64(b.buf[bufSize-4096:]); v != atomicVal {
			t.Fatalf("seed %d: final atomic value %d, model %d", seed, v, atomicVal)
		}
		if a.qp.State() != verbs.QPSRTS || b.qp.State() != verbs.QPSRTS {
			t.Fatalf("seed %d: states %v %v", seed, a.qp.State(), b.qp.State())
		}
		if _, used := a.stack.BudgetUse(); used != 0 {
			t.Fatalf("seed %d: %d bytes of budget held after the last completion", seed, used)
		}
		t.Logf("seed %d: virtual time %v; A: retransmitted=%d timeouts=%d seq_naks=%d implied=%d budget_waits=%d; B: dup=%d oos=%d icrc=%d",
			seed, h.clk.Now(), a.stack.ctr.Get(RetransmittedPkts), a.stack.ctr.Get(RetransmitTimeouts),
			a.stack.ctr.Get(RcvdSeqErr), a.stack.ctr.Get(ImpliedNak), a.stack.ctr.Get(BudgetWaits), b.stack.ctr.Get(DuplicateRequest),
			b.stack.ctr.Get(OutOfSequence), b.stack.ctr.Get(IcrcErr))
	}
}
