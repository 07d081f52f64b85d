package proto

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"
)

// Many CQs on one channel, each armed once and fired once in random
// order by two movers while the client takes: every fired CQ's event is
// seen exactly once (an arm is one-shot, so a slot set once is taken
// once), and no CQ that did not fire is seen.
func TestChannelEventsEachFiredOnce(t *testing.T) {
	mem := make([]uint64, ChannelAreaLen/8)
	e, err := NewChannelEvents(unsafeBytes(mem))
	if err != nil {
		t.Fatal(err)
	}
	const ncq, spread = 5000, 7 // slots spread over many leaf words
	order := rand.Perm(ncq)
	fired := order[:ncq*3/4] // a quarter never fire
	seen := make([]int, ncq*spread)
	stop, taken := make(chan struct{}), make(chan struct{})
	go func() { // the client, taking while the movers fire
		defer close(taken)
		for {
			select {
			case <-stop:
				return
			default:
				e.Take(func(i uint32) { seen[i]++ })
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := g; k < len(fired); k += 2 {
				if !e.Fire(uint32(fired[k] * spread)) {
					t.Errorf("slot %d refused", fired[k]*spread)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-taken
	e.Take(func(i uint32) { seen[i]++ })
	want := make([]int, len(seen))
	for _, n := range fired {
		want[n*spread] = 1
	}
	for i := range seen {
		if seen[i] != want[i] {
			t.Fatalf("slot %d seen %d times, want %d", i, seen[i], want[i])
		}
	}
	if e.Fire(MaxChannelCQs) {
		t.Fatal("slot MaxChannelCQs fired: out of range")
	}
}

// A short area is refused.
func TestChannelEventsRefuseShortArea(t *testing.T) {
	mem := make([]uint64, ChannelAreaLen/8)
	if _, err := NewChannelEvents(unsafeBytes(mem)[:ChannelAreaLen-8]); err == nil {
		t.Error("short area accepted")
	}
}

// The completion channel bodies decode to what was encoded, through the op's
// registered bodies, and a CQ-on-channel reply keeps the arena place.
func TestChannelMessagesRoundTrip(t *testing.T) {
	place := RingPlace{Chunk: 2, ChunkLen: ArenaChunkLen, Offset: 3 * ArenaPage}
	for _, c := range []struct {
		op   Op
		kind Kind
		m    Message
	}{
		{OpCreateChannel, KindReply, &CreateChannelReply{Channel: 7, Place: place}},
		{OpDestroyChannel, KindRequest, &Handle{H: 7}},
		{OpCreateCQOn, KindRequest, &CreateCQOnReq{CQE: 16, Channel: 7}},
		{OpCreateCQOn, KindReply, &CreateCQOnReply{CreateCQReply: CreateCQReply{CQ: 9, Ring: CQLayout{Slots: 16, Cap: 16}, Place: place}, Slot: 4095}},
	} {
		msg := AppendMessage(nil, Header{Op: c.op, Kind: c.kind, Seq: 1}, c.m)
		h, body, err := DecodeMessage(msg, 0)
		if err != nil {
			t.Fatalf("%v: %v", c.op, err)
		}
		got, err := DecodeBody(h, body)
		if err != nil {
			t.Fatalf("%v %v: %v", c.op, c.kind, err)
		}
		if !bytes.Equal(AppendMessage(nil, h, got), msg) {
			t.Fatalf("%v %v: %+v decodes as %+v", c.op, c.kind, c.m, got)
		}
	}
}
