// The data path's cost: PostSend, PostRecv and Poll allocate nothing (the
// daemon runs in a child process, so only the client's allocations are
// counted), and RDMA WRITE bandwidth through the daemon against the same
// workload on in-process NICs.
//
//	go test -run '^$' -bench . ./nic/rnicd/client

package client_test

import (
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/clock/nap"
)

// pollSpin polls cq until it returns one completion, for at most 10 s
// (then it reports a GENERAL_ERR completion), yielding the thread between
// polls so that the daemon gets the processor on a busy machine.
func pollSpin(cq ibv.CQ, wcs []verbs.WC) verbs.WC {
	for i := 0; cq.Poll(wcs[:1]) == 0; i++ {
		nap.Yield()
		if i&0xfff == 0 && i > 0 {
			if i == 0x1000 {
				wcs[1].WRID = uint64(time.Now().Add(10 * time.Second).UnixNano())
			} else if time.Now().UnixNano() > int64(wcs[1].WRID) {
				return verbs.WC{Status: verbs.WCGeneralErr}
			}
		}
	}
	return wcs[0]
}

// childPair connects two clients of a daemon running in a child process,
// so that the test process's allocations are the clients' alone.
func childPair(t testing.TB) (a, b *end, stop func()) {
	sock := filepath.Join(t.TempDir(), "rnicd.sock")
	daemon := startChild(t, "RNICD_TEST_ROLE=daemon", "RNICD_TEST_SOCKET="+sock)
	daemon.expect(t, "ready")
	spec := ibv.Spec{Backend: ibv.BackendDaemon, Name: "rnic0", Socket: sock}
	openSpec := func() ibv.Device {
		dev, err := ibv.Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dev.Close() })
		return dev
	}
	a, b = newEnd(t, openSpec(), verbs.QPTypeRC, 4096), newEnd(t, openSpec(), verbs.QPTypeRC, 4096)
	connect(t, a, b, nil)
	return a, b, func() { daemon.in.Close() }
}

// sendRound returns a round of the steady path: PostRecv at b, PostSend
// of wrs at a, a Poll at each end; failures land in *failed.
func sendRound(a, b *end, wrs []*verbs.SendWR, failed *string) func() {
	recv := []*verbs.RecvWR{{ID: 3, SGL: sge(b, 0, 4096)}}
	wcs := make([]verbs.WC, 4)
	return func() {
		if err := b.qp.PostRecv(recv...); err != nil {
			*failed = err.Error()
			return
		}
		if err := a.qp.PostSend(wrs...); err != nil {
			*failed = err.Error()
			return
		}
		if wc := pollSpin(a.cq, wcs); wc.Status != verbs.WCSuccess {
			*failed = wc.Status.String()
		}
		if wc := pollSpin(b.cq, wcs); wc.Status != verbs.WCSuccess {
			*failed = wc.Status.String()
		}
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	a, b, stop := childPair(t)
	defer stop()
	send := []*verbs.SendWR{{ID: 1, Opcode: verbs.WRSendWithImm, Flags: verbs.SendSignaled, SGL: sge(a, 0, 64)}}
	inline := []*verbs.SendWR{{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline, SGL: sge(a, 0, 32)}}
	var failed string
	for name, f := range map[string]func(){"send": sendRound(a, b, send, &failed), "inline send": sendRound(a, b, inline, &failed)} {
		for range 50 {
			f()
		}
		if n := testing.AllocsPerRun(500, f); n != 0 || failed != "" {
			t.Errorf("%s: %v allocations per PostRecv+PostSend+2 Polls (failure: %q)", name, n, failed)
		}
	}
}

// BenchmarkSendRecv: one 64-byte SEND and its receive, round trip,
// between two clients of a daemon in a child process; the allocations
// reported are the clients'.
func BenchmarkSendRecv(b *testing.B) {
	x, y, stop := childPair(b)
	defer stop()
	var failed string
	f := sendRound(x, y, []*verbs.SendWR{{ID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: sge(x, 0, 64)}}, &failed)
	b.ReportAllocs()
	for b.Loop() {
		f()
	}
	if failed != "" {
		b.Fatal(failed)
	}
}

// BenchmarkWrite64K: RDMA WRITE bandwidth, 64 KiB messages, 16 in flight,
// between two clients through one daemon (its two NICs) and between the
// same NICs in-process. The ratio daemon/local is what rnicd costs.
func BenchmarkWrite64K(b *testing.B) {
	const size, window = 64 << 10, 16
	run := func(b *testing.B, x, y ibv.Device) {
		tx, rx := newEnd(b, x, verbs.QPTypeRC, window*size), newEnd(b, y, verbs.QPTypeRC, window*size)
		connect(b, tx, rx, nil)
		wrs := make([][]*verbs.SendWR, window)
		for i := range wrs {
			wrs[i] = []*verbs.SendWR{{ID: uint64(i), Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
				SGL: sge(tx, i*size, size), RemoteAddr: rx.mr.Addr() + uint64(i*size), RKey: rx.mr.RKey()}}
		}
		wcs := make([]verbs.WC, window)
		b.SetBytes(size)
		b.ReportAllocs()
		b.ResetTimer()
		inflight, posted := 0, 0
		for done := 0; done < b.N; {
			for inflight < window && posted < b.N {
				if err := tx.qp.PostSend(wrs[posted%window]...); err != nil {
					b.Fatal(err)
				}
				inflight++
				posted++
			}
			n := tx.cq.Poll(wcs)
			for _, wc := range wcs[:n] {
				if wc.Status != verbs.WCSuccess {
					b.Fatal(wc.Status)
				}
			}
			inflight -= n
			done += n
			if n == 0 {
				runtime.Gosched() // two cores: let the NIC run
			}
		}
	}
	b.Run("daemon", func(b *testing.B) {
		d := rnicdtest.Start(b, rnicdtest.Options{NICs: 2, MTU: 9000})
		run(b, open(b, d, 0), open(b, d, 1))
	})
	b.Run("local", func(b *testing.B) {
		var devs [2]ibv.Device
		for i := range devs {
			n, err := rnicdtest.OpenNIC("rnic0", 9000)
			if err != nil {
				b.Fatal(err)
			}
			devs[i] = rnicdtest.Device(n)
			b.Cleanup(func() { devs[i].Close() })
		}
		run(b, devs[0], devs[1])
	})
}

// BenchmarkWriteRoundTrip: the 8-byte RDMA WRITE ping-pong of perftest's
// write_lat (each side polls the last byte of its buffer for the peer's
// WRITE, then answers), between two clients of a daemon in a child process
// and between two NICs in this process. ns/op is one round trip; the ratio
// daemon/local is what rnicd adds to it. Each waits as rnic perf does: on
// a daemon's NIC spinning with the thread yielded, on an in-process NIC
// parked on the MR's watch (spinning there would keep the Go scheduler
// from polling the NICs' sockets).
func BenchmarkWriteRoundTrip(b *testing.B) {
	b.Run("daemon", func(b *testing.B) {
		x, y, stop := childPair(b)
		defer stop()
		writePingPong(b, x, y)
	})
	b.Run("local", func(b *testing.B) {
		var ends [2]*end
		for i := range ends {
			n, err := rnicdtest.OpenNIC("rnic0", 9000)
			if err != nil {
				b.Fatal(err)
			}
			dev := rnicdtest.Device(n)
			b.Cleanup(func() { dev.Close() })
			ends[i] = newEnd(b, dev, verbs.QPTypeRC, 4096)
		}
		connect(b, ends[0], ends[1], nil)
		writePingPong(b, ends[0], ends[1])
	})
}

// writePingPong runs b.N WRITE round trips between x and y.
func writePingPong(b *testing.B, x, y *end) {
	const size = 8
	wr := func(from, to *end) *verbs.SendWR {
		return &verbs.SendWR{Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled, SGL: sge(from, 0, size),
			RemoteAddr: to.mr.Addr() + 2048, RKey: to.mr.RKey()}
	}
	xw, yw := wr(x, y), wr(y, x)
	wcs := make([]verbs.WC, 4)
	// retire polls both ends' CQs: one completion per WRITE.
	retire := func() {
		for _, e := range []*end{x, y} {
			for _, wc := range wcs[:e.cq.Poll(wcs)] {
				if wc.Status != verbs.WCSuccess {
					b.Fatal(wc.Status)
				}
			}
		}
	}
	// await waits until e's target holds seq.
	await := func(e *end, seq byte) {
		var landed <-chan struct{}
		if m := nic.MROf(e.mr); m != nil {
			landed = m.Region().Watch()
		}
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; atomicByte(e.buf, 2048+size-1) != seq; i++ {
			retire()
			if landed == nil {
				nap.Yield()
			} else {
				select {
				case <-landed:
				case <-time.After(time.Millisecond):
				}
			}
			if i&0xff == 0 && time.Now().After(deadline) {
				b.Fatalf("no WRITE arrived in 10 s: seq %d, target % x", seq, e.buf[2048:2048+size])
			}
		}
	}
	send := func(from *end, w *verbs.SendWR, seq byte) {
		from.buf[size-1] = seq
		if err := from.qp.PostSend(w); err != nil {
			b.Fatal(err)
		}
	}
	seq := byte(0)
	for b.Loop() {
		seq++
		send(x, xw, seq)
		await(y, seq)
		send(y, yw, seq)
		await(x, seq)
		retire()
	}
}

// atomicByte loads buf[i], which a NIC writes concurrently.
func atomicByte(buf []byte, i int) byte {
	w := (*atomic.Uint32)(unsafe.Pointer(&buf[i&^3]))
	return byte(w.Load() >> (8 * (i & 3)))
}
