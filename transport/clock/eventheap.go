package clock

import "time"

// eventHeap is the Virtual clock's queue: a binary min-heap ordered by
// (at, seq). Each slot carries its event's key, so that sifting compares
// without loading the events themselves, and the typed code avoids
// container/heap's interface calls: every frame of a simulated link is one
// push and one pop. seq is unique, so the order is total and any correct
// heap runs events in the same order.
type eventHeap []heapSlot

type heapSlot struct {
	at  time.Duration
	seq uint64
	e   *event
}

func (a *heapSlot) before(b *heapSlot) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// set puts s at i and tells its event where it is.
func (h eventHeap) set(i int, s heapSlot) {
	h[i] = s
	s.e.index = i
}

func (h *eventHeap) push(e *event) {
	*h = append(*h, heapSlot{})
	h.up(len(*h)-1, heapSlot{at: e.at, seq: e.seq, e: e})
}

// pop removes and returns the earliest event; the heap is not empty.
func (h *eventHeap) pop() *event {
	old := *h
	top := old[0].e
	n := len(old) - 1
	last := old[n]
	old[n] = heapSlot{}
	*h = old[:n]
	if n > 0 {
		h.down(0, last)
	}
	top.index = -1
	return top
}

// remove takes the event at i out of the heap.
func (h *eventHeap) remove(i int) {
	old := *h
	e := old[i].e
	n := len(old) - 1
	last := old[n]
	old[n] = heapSlot{}
	*h = old[:n]
	if i < n {
		h.fix1(i, last)
	}
	e.index = -1
}

// fix restores the order after the key of the event at i changed.
func (h eventHeap) fix(i int) {
	e := h[i].e
	h.fix1(i, heapSlot{at: e.at, seq: e.seq, e: e})
}

// fix1 places s, whose slot is i, up or down as its key requires.
func (h eventHeap) fix1(i int, s heapSlot) {
	if i > 0 && s.before(&h[(i-1)/2]) {
		h.up(i, s)
		return
	}
	h.down(i, s)
}

// up places s at the hole i or above it.
func (h eventHeap) up(i int, s heapSlot) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.before(&h[p]) {
			break
		}
		h.set(i, h[p])
		i = p
	}
	h.set(i, s)
}

// down places s at the hole i or below it.
func (h eventHeap) down(i int, s heapSlot) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].before(&h[c]) {
			c = r
		}
		if !h[c].before(&s) {
			break
		}
		h.set(i, h[c])
		i = c
	}
	h.set(i, s)
}
