package udp

import (
	"runtime"
	"testing"
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
		r.poll.Received()
		again := r.pollAgain()
		r.poll.Release()
		if again == noPoll {
			t.Errorf("NoPoll %v: polls again after a datagram: %v", noPoll, again)
		}
	}
}
