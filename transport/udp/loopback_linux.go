// Loopback inside the process: a frame for another endpoint of this
// process (Config.Loopback on both) is handed to it in memory instead of
// crossing a kernel socket, as a NIC loops frames to itself.
//
// Two NICs of one rnicd on loopback addresses are the common case of CI:
// there the kernel's part of a frame's trip (a sendmsg, the receiver's
// epoll wake-up, a recvmmsg and the empty one after it) is most of what
// the daemon spends per frame. The looped frame is the one the receiver
// would have rebuilt from the datagram (header.go): the same addresses,
// ports, TOS and TTL, and the flow label 0 a socket sends. The sender's
// per-port socket is still looked up, so a frame whose source port could
// not be bound still leaves from the main socket, resealed, as before.
// Everything above the endpoint (faults, captures, the engine's counters)
// sees the same frames; the endpoint's own counters count them as sent
// and received, with no system call behind SendBatches or RecvBatches'
// batches (a looped hand-over counts as one receive batch).
//
// The receiver's queue is bounded as its socket's receive buffer is
// (RecvBufferBytes, counting each frame's payload and headers): what
// overflows it is dropped and counted in Stats.LoopbackDrops, as the
// kernel drops what overflows a socket. A goroutine per endpoint hands
// the queue to the receiver in batches, under the same lock as the
// socket's receive loop, so the receiver is never called concurrently
// and never from a Send.
//
// A looped frame has no kernel receive time; with Config.RecvTimestamps
// the receiver's Arrival is the time it was queued, as the kernel stamps a
// datagram when it is queued to the socket.

package udp

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// localEndpoints are this process's endpoints that take looped frames, by
// address and port; readers load the map, writers copy it.
var localEndpoints struct {
	mu sync.Mutex
	m  atomic.Pointer[map[netip.AddrPort]*Endpoint]
}

// registerLocal makes e reachable by loopback (its socket holds the
// address, so no other endpoint does).
func registerLocal(e *Endpoint) {
	localEndpoints.mu.Lock()
	defer localEndpoints.mu.Unlock()
	next := make(map[netip.AddrPort]*Endpoint)
	if m := localEndpoints.m.Load(); m != nil {
		for k, v := range *m {
			next[k] = v
		}
	}
	next[netip.AddrPortFrom(e.cfg.Addr, e.cfg.Port)] = e
	localEndpoints.m.Store(&next)
}

// unregisterLocal takes e out: frames to its address go to the kernel
// again (and find its socket closed).
func unregisterLocal(e *Endpoint) {
	localEndpoints.mu.Lock()
	defer localEndpoints.mu.Unlock()
	m := localEndpoints.m.Load()
	key := netip.AddrPortFrom(e.cfg.Addr, e.cfg.Port)
	if m == nil || (*m)[key] != e {
		return
	}
	next := make(map[netip.AddrPort]*Endpoint, len(*m))
	for k, v := range *m {
		if k != key {
			next[k] = v
		}
	}
	localEndpoints.m.Store(&next)
}

// localPeer returns the endpoint of this process o is addressed to, if
// both it and e loop.
func (e *Endpoint) localPeer(o *outgoing) *Endpoint {
	if !e.cfg.Loopback {
		return nil
	}
	m := localEndpoints.m.Load()
	if m == nil {
		return nil
	}
	return (*m)[netip.AddrPortFrom(addrOf(o.v6, &o.dst), o.dstPort)]
}

// loopDrops is Stats.LoopbackDrops.
func (e *Endpoint) loopDrops() uint64 { return e.sys.loop.drops.Load() }

// loopFrame is a looped datagram: its payload at buf[hdrRoom:hdrRoom+n],
// room for the headers in front.
type loopFrame struct {
	buf *[]byte // from loopQueue.pool
	n   int
	a   arrival
	at  int64 // when it was queued (Unix ns), with the receiver's RecvTimestamps
}

// loopQueue is an endpoint's queue of looped frames.
type loopQueue struct {
	mu     sync.Mutex
	frames []loopFrame
	bytes  int // charged against the receive buffer
	closed bool
	drops  atomic.Uint64

	wake chan struct{} // cap 1: frames were queued
	done chan struct{} // closed when run returns
	pool sync.Pool     // *[]byte buffers of hdrRoom + MaxDatagram
}

func (q *loopQueue) init(e *Endpoint) {
	q.wake, q.done = make(chan struct{}, 1), make(chan struct{})
	size := hdrRoom + e.cfg.MaxDatagram
	q.pool.New = func() any { b := make([]byte, size); return &b }
}

// loop hands the frame o describes to peer, counting it as sent.
func (e *Endpoint) loop(peer *Endpoint, o *outgoing) {
	e.ctr.send.sent.Add(1)
	peer.sys.loop.put(peer, e, o)
}

// put queues a copy of o's payload for q's endpoint p, unless it is too
// long for p's buffers (Truncated, as MSG_TRUNC) or p's buffer is full.
func (q *loopQueue) put(p, from *Endpoint, o *outgoing) {
	if len(o.payload) > p.cfg.MaxDatagram {
		p.ctr.recv.truncated.Add(1)
		return
	}
	cost := hdrRoom + len(o.payload)
	f := loopFrame{n: len(o.payload), a: arrival{v6: o.v6, dst: o.dst, srcPort: o.srcPort, dstPort: o.dstPort, tos: o.tos, ttl: o.ttl}}
	copy(f.a.src[:], from.cfg.Addr.AsSlice())
	if p.cfg.RecvTimestamps {
		f.at = time.Now().UnixNano()
	}
	q.mu.Lock()
	if q.closed || q.bytes+cost > p.sys.rcvbuf {
		if !q.closed {
			q.drops.Add(1)
		}
		q.mu.Unlock()
		return
	}
	f.buf = q.pool.Get().(*[]byte)
	copy((*f.buf)[hdrRoom:], o.payload)
	q.frames = append(q.frames, f)
	q.bytes += cost
	select { // under mu: stop closes wake
	case q.wake <- struct{}{}:
	default:
	}
	q.mu.Unlock()
}

// take moves up to max queued frames into into.
func (q *loopQueue) take(into []loopFrame, max int) []loopFrame {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(max, len(q.frames))
	into = append(into[:0], q.frames[:n]...)
	for _, f := range into {
		q.bytes -= hdrRoom + f.n
	}
	rest := copy(q.frames, q.frames[n:])
	clear(q.frames[rest:])
	q.frames = q.frames[:rest]
	return into
}

// run delivers looped frames to e's receiver in batches until close.
func (q *loopQueue) run(e *Endpoint) {
	defer close(q.done)
	batch := make([]loopFrame, 0, e.cfg.BatchSize)
	frames := make([][]byte, 0, e.cfg.BatchSize)
	var stamps []int64 // stays nil without RecvTimestamps
	if e.cfg.RecvTimestamps {
		stamps = make([]int64, 0, e.cfg.BatchSize)
	}
	for range q.wake {
		for {
			batch = q.take(batch, e.cfg.BatchSize)
			if len(batch) == 0 {
				break
			}
			frames, stamps = frames[:0], stamps[:0]
			for i := range batch {
				f := &batch[i]
				src := SyntheticMAC(addrOf(f.a.v6, &f.a.src))
				frames = append(frames, synthesize(*f.buf, f.n, &f.a, e.cfg.MAC, src))
				if stamps != nil {
					stamps = append(stamps, f.at)
				}
			}
			e.ctr.recv.recvBatches.Add(1)
			e.deliver(frames, stamps)
			for i := range batch {
				q.pool.Put(batch[i].buf)
				batch[i].buf = nil
			}
		}
	}
}

// stop drops what is queued and ends run.
func (q *loopQueue) stop() {
	q.mu.Lock()
	q.closed = true
	q.frames, q.bytes = nil, 0
	close(q.wake)
	q.mu.Unlock()
	<-q.done
}
