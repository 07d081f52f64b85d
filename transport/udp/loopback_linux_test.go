package udp

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// TestLoopbackBytesAsKernel: on one pair of addresses, opened first
// without loopback and then with it, the frames received (rebuilt IP and
// UDP headers, TOS, TTL, synthetic MACs, the ICRC they carry) are byte
// for byte the same and counted the same, and the looped ones went
// through no socket (no sendmmsg).
func TestLoopbackBytesAsKernel(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		tweak := func(loop bool) func(*Config) {
			return func(c *Config) { c.Loopback = loop }
		}
		a, b := openPair(t, v6, tweak(false))
		ca, cb := a.cfg, b.cfg
		kernel := sendAll(t, a, b)
		ka, kb := a.Stats(), b.Stats()
		a.Close()
		b.Close()
		ca.Loopback, cb.Loopback = true, true
		la, err := Open(ca)
		if err != nil {
			t.Fatal(err)
		}
		defer la.Close()
		lb, err := Open(cb)
		if err != nil {
			t.Fatal(err)
		}
		defer lb.Close()
		looped := sendAll(t, la, lb)
		for i := range kernel {
			if !bytes.Equal(kernel[i], looped[i]) {
				t.Errorf("v6=%v frame %d differs:\nkernel % x\nlooped % x", v6, i, kernel[i], looped[i])
			}
		}
		sa, sb := la.Stats(), lb.Stats()
		if sa.SendBatches != 0 || ka.SendBatches == 0 || sa.Sent != ka.Sent || sb.Received != kb.Received || sa.Sent != uint64(len(looped)) {
			t.Errorf("v6=%v: kernel path's stats %+v, %+v; looped %+v, %+v", v6, ka, kb, sa, sb)
		}
	}
}

// sendAll sends a fixed set of frames from a to b and returns what b got.
func sendAll(t *testing.T, a, b *Endpoint) [][]byte {
	t.Helper()
	const n = 16
	cb := collect(b, n)
	var batch [][]byte
	for i := range n {
		f := roceFrame(a, b, frameOpts{srcPort: uint16(0xC200 + i%2), tos: uint8(i * 8), ttl: uint8(64 - i),
			psn: uint32(i), payload: bytes.Repeat([]byte{byte(i)}, 1+i*500)})
		if i%2 == 0 {
			if err := a.Send(f); err != nil {
				t.Fatal(err)
			}
		} else {
			batch = append(batch, f)
		}
	}
	if err := a.SendBatch(batch); err != nil {
		t.Fatal(err)
	}
	got := make([][]byte, 0, n)
	for range n {
		got = append(got, cb.next(t))
	}
	// Send and SendBatch interleave differently than they were called
	// only if the path reorders; sort by PSN order of sending instead
	// of arrival to compare the two paths' frames one to one.
	byPSN := make([][]byte, n)
	for _, f := range got {
		byPSN[decode(t, f, b.Port()).Packet.BTH().PSN()] = f
	}
	return byPSN
}

// TestLoopbackNeedsBoth: an endpoint that loops sends to one that does
// not through the kernel, and the frames arrive.
func TestLoopbackNeedsBoth(t *testing.T) {
	a, b := openPair(t, false, nil)
	ca := a.cfg
	a.Close()
	ca.Loopback = true
	la, err := Open(ca)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	cb := collect(b, 4)
	if err := la.SendBatch([][]byte{roceFrame(la, b, frameOpts{payload: []byte("x")})}); err != nil {
		t.Fatal(err)
	}
	decode(t, cb.next(t), b.Port())
	if st := la.Stats(); st.SendBatches != 1 {
		t.Errorf("sender's stats %+v: the frame should have gone through sendmmsg", st)
	}
}

// TestLoopbackBounded: a receiver that does not keep up fills the queue
// standing for its receive buffer; what overflows is dropped and counted
// (LoopbackDrops), as the kernel drops what overflows a socket, and every
// frame sent is either received or counted dropped.
func TestLoopbackBounded(t *testing.T) {
	a, b := openPair(t, false, func(c *Config) { c.Loopback = true; c.RecvBuffer = 4096 })
	release := make(chan struct{})
	var mu sync.Mutex
	received := 0
	b.SetReceiver(func([]byte) {
		mu.Lock()
		first := received == 0
		received++
		mu.Unlock()
		if first {
			<-release
		}
	})
	const n = 200
	payload := make([]byte, 1000)
	for i := range n {
		if err := a.Send(roceFrame(a, b, frameOpts{psn: uint32(i), payload: payload})); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		r := received
		mu.Unlock()
		st := b.Stats()
		if uint64(r)+st.LoopbackDrops == n {
			if st.LoopbackDrops == 0 || r == 0 {
				t.Errorf("received %d, dropped %d: the queue was not bounded", r, st.LoopbackDrops)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("received %d, dropped %d of %d sent", r, st.LoopbackDrops, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLoopbackClose: a receiver closing while frames are looped to it
// stops nothing, and later frames to its address go to the kernel.
func TestLoopbackClose(t *testing.T) {
	a, b := openPair(t, false, func(c *Config) { c.Loopback = true })
	b.SetReceiver(func([]byte) {})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f := roceFrame(a, b, frameOpts{payload: []byte("x")})
		for range 2000 {
			a.Send(f)
		}
	}()
	time.Sleep(time.Millisecond)
	b.Close()
	<-done
	if err := a.Send(roceFrame(a, b, frameOpts{payload: []byte("x")})); err != nil {
		t.Logf("send to a closed peer's address: %v", err)
	}
}
