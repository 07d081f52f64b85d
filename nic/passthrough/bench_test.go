//go:build verbs

package passthrough

import (
	"testing"

	"github.com/rnic/rnic/nic/verbs"
)

// TestDataPathAllocs: polling and posting allocate nothing: the batches
// live on the stack (cgo noescape), only errors allocate.
func TestDataPathAllocs(t *testing.T) {
	d := openDevice(t)
	l := newLoop(t, d, 128)
	wcs := make([]verbs.WC, 16)
	if n := testing.AllocsPerRun(100, func() { l.cq.(*cq).Poll(wcs) }); n != 0 {
		t.Errorf("Poll allocates %v times", n)
	}
	wr := &verbs.RecvWR{ID: 1, SGL: l.sge(0, 64)}
	q := l.b.(*qp)
	if n := testing.AllocsPerRun(100, func() {
		if err := q.PostRecv(wr); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("PostRecv allocates %v times", n)
	}
}

// BenchmarkPollEmpty is the cost of one cgo round trip: polling an empty
// CQ.
func BenchmarkPollEmpty(b *testing.B) {
	d := openDevice(b)
	c, err := d.CreateCQ(16)
	if err != nil {
		b.Fatal(err)
	}
	wcs := make([]verbs.WC, 16)
	for b.Loop() {
		c.Poll(wcs)
	}
}

// BenchmarkSend posts batch SENDs and batch receives per round over the
// loopback pair and waits for all 2×batch completions.
func BenchmarkSend(b *testing.B) {
	for _, batch := range []int{1, 16} {
		b.Run(map[int]string{1: "batch1", 16: "batch16"}[batch], func(b *testing.B) {
			l := newLoop(b, openDevice(b), 64)
			recvs := make([]*verbs.RecvWR, batch)
			sends := make([]*verbs.SendWR, batch)
			for i := range batch {
				recvs[i] = &verbs.RecvWR{ID: uint64(i), SGL: l.sge(4096+i*64, 64)}
				sends[i] = &verbs.SendWR{ID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: l.sge(i*64, 64)}
			}
			wcs := make([]verbs.WC, 2*batch)
			b.SetBytes(int64(64 * batch))
			for b.Loop() {
				if err := l.b.PostRecv(recvs...); err != nil {
					b.Fatal(err)
				}
				if err := l.a.PostSend(sends...); err != nil {
					b.Fatal(err)
				}
				for got := 0; got < 2*batch; {
					got += l.cq.Poll(wcs[got:])
				}
			}
		})
	}
}
