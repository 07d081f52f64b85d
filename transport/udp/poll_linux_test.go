package udp

import (
	"runtime"
	"testing"
	"time"
)

// TestReceiveLoopPolling: after a datagram the receive loop tries its
// socket again at once (transport/poll), unless its endpoint says NoPoll,
// as rnicd's NICs do.
func TestReceiveLoopPolling(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("GOMAXPROCS=1: no reader polls, with or without NoPoll")
	}
	for _, noPoll := range []bool{false, true} {
		a, _ := openPair(t, false, func(c *Config) { c.NoPoll = noPoll })
		r := newReader(a, a.sys.reader.s) // a reader of its own: the endpoint's runs meanwhile
		// One try may rightly say no: the endpoint's own reader may hold
		// the process's polling slot (it polls after the pair's set-up
		// traffic), or a busy machine may stop this goroutine for the
		// whole window. So a reader that may poll must do so in one of
		// many tries, and one that must not, in none.
		polled := 0
		for range 200 {
			r.poll.Received()
			if r.pollAgain() {
				polled++
			}
			r.poll.Release()
			if polled > 0 && !noPoll {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		if (polled > 0) == noPoll {
			t.Errorf("NoPoll %v: polled again after a datagram in %d of the tries", noPoll, polled)
		}
	}
}
