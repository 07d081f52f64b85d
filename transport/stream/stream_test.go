package stream_test

import (
	"testing"
	"time"

	"github.com/rnic/rnic/transport/stream"
)

// TestMustRefuse: a write into an empty send buffer is always taken,
// whatever its size; otherwise the buffer's limit holds.
func TestMustRefuse(t *testing.T) {
	for _, c := range []struct {
		buffered, n, limit int
		refuse             bool
	}{
		{0, 1 << 30, 100, false},
		{50, 50, 100, false},
		{50, 51, 100, true},
		{100, 1, 100, true},
		{1, 0, 1, false},
	} {
		if got := stream.MustRefuse(c.buffered, c.n, c.limit); got != c.refuse {
			t.Errorf("MustRefuse(%d, %d, %d) = %v", c.buffered, c.n, c.limit, got)
		}
	}
}

// TestTCPConfigDefaults: zero fields take the defaults, set ones stay, and
// a negative Linger (wait forever) is kept.
func TestTCPConfigDefaults(t *testing.T) {
	got := stream.TCPConfig{}.WithDefaults()
	want := stream.TCPConfig{SendBuffer: stream.DefaultSendBuffer, ReadBuffer: stream.DefaultReadBuffer,
		Linger: stream.DefaultLinger, DialTimeout: stream.DefaultDialTimeout}
	if got != want {
		t.Errorf("zero config: %+v, want %+v", got, want)
	}
	set := stream.TCPConfig{SendBuffer: 1, ReadBuffer: 2, Linger: -1, DialTimeout: time.Second}
	if got := set.WithDefaults(); got != set {
		t.Errorf("set config: %+v, want %+v", got, set)
	}
}
