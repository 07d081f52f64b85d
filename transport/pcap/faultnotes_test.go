package pcap_test

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/pcap"
)

// TestFaultEndpointCaptureNotes: a FaultEndpoint's capture keeps every
// frame that crossed it, a comment on each the faults touched (read back
// by the Reader), as a simulated link's capture does: the lost frame as
// sent, both copies of the duplicate, the changed bytes, the held frame
// after the frames that overtook it.
func TestFaultEndpointCaptureNotes(t *testing.T) {
	var buf bytes.Buffer
	w, _ := pcap.NewNgWriter(&buf)
	script := func(dir transport.Direction, i int, f []byte) transport.Verdict {
		switch i {
		case 1:
			return transport.Drop()
		case 2:
			return transport.Duplicate()
		case 3:
			f[20] ^= 0x01
			return transport.Replace(f)
		case 4:
			return transport.Delay(50 * time.Millisecond)
		}
		return transport.Pass()
	}
	a, b := transport.NewPipe()
	fe := transport.WithFaults(a, clock.NewReal(), transport.FaultConfig{Script: script})
	fe.Capture(w, time.Now)
	var mu sync.Mutex
	var got []uint32
	b.SetReceiver(func(f []byte) {
		mu.Lock()
		got = append(got, frameID(f))
		mu.Unlock()
	})
	for i := range 6 {
		if err := fe.Send(mkFrame(uint32(i), 64)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 6 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	fe.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	frames, err := pcap.ReadFrom(&buf)
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		id   uint32
		note string
	}
	var recs []rec
	for _, f := range frames {
		note := ""
		if len(f.Comments) > 0 {
			note = f.Comments[0]
		}
		recs = append(recs, rec{frameID(f.Data), note})
	}
	want := []rec{{0, ""}, {1, "rnic: lost"}, {2, ""}, {2, "rnic: duplicate"}, {3, "rnic: corrupted"}, {5, ""},
		{4, "rnic: delayed"}}
	if !slices.Equal(recs, want) {
		t.Errorf("capture records %v, want %v", recs, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []uint32{0, 2, 2, 3, 5, 4}) {
		t.Errorf("delivered %v", got)
	}
}
