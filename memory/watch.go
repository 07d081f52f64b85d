// Watching a region for the NIC's writes: an in-process program that waits
// for an RDMA WRITE to land (perftest's latency test polls the last byte of
// its buffer) has no completion to wait on, and a timer is a poor stand-in
// (the Go runtime rounds sub-millisecond sleeps up to a millisecond when no
// socket wakes it). A watch is the NIC's doorbell to such a program: every
// write a Ref makes into the region's memory (RDMA WRITE placement, a
// receive's scatter) signals the channel, which the engine's receive
// goroutine can hand straight to the waiting one.
//
// The signal says only that something was written, and it coalesces: the
// watcher looks at the memory after each receive from the channel. An
// unwatched region costs a write one atomic load.

package memory

import "sync"

// regionWatch is a Region's watch channel, made on first use.
type regionWatch struct {
	once sync.Once
	c    chan struct{}
}

// Watch returns a channel that receives a value after writes through a Ref
// or Table.Scatter into the region's memory (by any key of the region or of a window bound
// to it). Values coalesce: one may stand for several writes, and one may
// be pending from before the call. It is meant for one waiting goroutine
// at a time: of several, only one takes a given value. Once called, the
// watch stays on for the region's life.
func (r *Region) Watch() <-chan struct{} {
	r.watch.once.Do(func() {
		c := make(chan struct{}, 1)
		r.watch.c = c
		r.watched.Store(true)
	})
	return r.watch.c
}

// written signals the region's watch, if any.
func (r *Region) written() {
	if r.watched.Load() {
		select {
		case r.watch.c <- struct{}{}:
		default:
		}
	}
}
