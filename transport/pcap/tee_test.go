package pcap_test

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
)

// answeringEndpoint models a peer faster than the sender: each frame sent
// is answered (frame ID + 100) on another goroutine, as a kernel socket's
// peer does, and Send returns only once the answer has been delivered, as
// when the sending thread is preempted right after its syscall on a busy
// machine.
type answeringEndpoint struct {
	recv atomic.Pointer[func([]byte)]
}

func (e *answeringEndpoint) Send(f []byte) error {
	answer := mkFrame(frameID(f)+100, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if r := e.recv.Load(); r != nil {
			(*r)(answer)
		}
	}()
	<-done
	return nil
}
func (e *answeringEndpoint) SetReceiver(f func([]byte)) { e.recv.Store(&f) }
func (e *answeringEndpoint) Close() error               { return nil }

// TestTeeRecordsBeforeSending: a frame is in the capture before anything
// that answers it, however fast the answer.
func TestTeeRecordsBeforeSending(t *testing.T) {
	var buf bytes.Buffer
	w, _ := pcap.NewWriter(&buf)
	tee := pcap.Tee(&answeringEndpoint{}, w, time.Now)
	tee.SetReceiver(func([]byte) {})
	for id := uint32(1); id <= 3; id++ {
		if err := tee.Send(mkFrame(id, 64)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readWithPcapgo(t, buf.Bytes())
	want := []uint32{1, 101, 2, 102, 3, 103}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if frameID(r.data) != want[i] {
			t.Fatalf("record %d is frame %d, want %d (a request must precede its answer)", i, frameID(r.data), want[i])
		}
		if i > 0 && r.ts.Before(recs[i-1].ts) {
			t.Fatalf("record %d stamped before record %d", i, i-1)
		}
	}
}

// discardEndpoint accepts every frame.
type discardEndpoint struct{}

func (discardEndpoint) Send([]byte) error        { return nil }
func (discardEndpoint) SetReceiver(func([]byte)) {}
func (discardEndpoint) Close() error             { return nil }

// TestTeeTimestampsNeverDecrease: goroutines sending at once through tees
// sharing one writer get records whose wall-clock timestamps follow the
// file's order, because the stamp is taken under the writer's lock.
func TestTeeTimestampsNeverDecrease(t *testing.T) {
	var buf bytes.Buffer
	w, _ := pcap.NewWriter(&buf)
	const senders, each = 8, 2000
	var wg sync.WaitGroup
	for s := range senders {
		tee := pcap.Tee(discardEndpoint{}, w, time.Now)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_ = tee.Send(mkFrame(uint32(s*each+i), 64))
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readWithPcapgo(t, buf.Bytes())
	if len(recs) != senders*each {
		t.Fatalf("%d records, want %d", len(recs), senders*each)
	}
	back := 0
	for i := 1; i < len(recs); i++ {
		if recs[i].ts.Before(recs[i-1].ts) {
			back++
		}
	}
	if back > 0 {
		t.Fatalf("%d of %d records stamped before the record ahead of them", back, len(recs))
	}
}

// TestTeeClosedRecordsNothing: after Close, a send fails and leaves no
// record.
func TestTeeClosedRecordsNothing(t *testing.T) {
	var buf bytes.Buffer
	w, _ := pcap.NewWriter(&buf)
	a, _ := transport.NewPipe()
	tee := pcap.Tee(a, w, time.Now)
	if err := tee.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tee.Send(mkFrame(1, 64)); err == nil {
		t.Fatal("send after close succeeded")
	}
	if n := w.Frames(); n != 0 {
		t.Fatalf("%d frames recorded after close", n)
	}
}
