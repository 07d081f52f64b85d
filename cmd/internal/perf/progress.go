// Progress lines for long runs: silent for the first seconds (a short run
// prints nothing but its report), then one line a second.

package perf

import (
	"fmt"
	"io"
	"time"
)

// Progress timing (variables so that a test can make a short run report).
var (
	progressAfter = 3 * time.Second
	progressEvery = time.Second
	// progressCheck is how many ticks pass between looks at the clock.
	progressCheck uint = 256
)

// progress prints how far a loop has come. Its tick is cheap enough to call
// on every loop turn: it looks at the clock only every progressCheck calls.
type progress struct {
	w     io.Writer
	what  string
	total int
	size  int // bytes per operation, for a rate (0: none)
	start time.Time
	next  time.Time
	calls uint
	last  int
	lastT time.Time
}

func newProgress(w io.Writer, what string, total, size int) *progress {
	now := time.Now()
	return &progress{w: w, what: what, total: total, size: size, start: now, next: now.Add(progressAfter), lastT: now}
}

// tick reports done operations out of total.
func (p *progress) tick(done int) {
	p.calls++
	if p.calls%progressCheck != 0 {
		return
	}
	now := time.Now()
	if now.Before(p.next) {
		return
	}
	p.next = now.Add(progressEvery)
	line := fmt.Sprintf("perf: %s %d/%d ops (%.0f%%) after %.1fs", p.what, done, p.total,
		100*float64(done)/float64(p.total), now.Sub(p.start).Seconds())
	if dt := now.Sub(p.lastT).Seconds(); p.size > 0 && dt > 0 {
		line += fmt.Sprintf(", %.2f MB/sec", float64(done-p.last)*float64(p.size)/mb/dt)
	}
	p.last, p.lastT = done, now
	fmt.Fprintln(p.w, line)
}
