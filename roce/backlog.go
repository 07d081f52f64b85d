package roce

import "github.com/rnic/rnic/transport"

// A local ACK timeout is a guess that a packet or its answer was lost.
// On a link that cannot lose a frame (transport.Backlogger: the
// in-process pipe) it can be told from the truth: a timer that fires
// while the request it waits for is still queued towards the peer, or
// while the peer's answers are still queued towards this stack, fired
// because a receiver did not run (the process was starved of CPU), not
// because anything was lost. Counting such timeouts against retry_cnt
// failed a starved but lossless run with RETRY_EXC_ERR; so the timer
// waits another timeout instead (TimeoutsDeferred). The wait is bounded
// by frames already sent, not by traffic still to come: a request queued
// before the timer was armed, then the answers queued before the first
// deferral for them. A peer whose end closed drops what it is sent,
// which counts as delivered, so a dead peer still ends in RETRY_EXC_ERR
// after retry_cnt+1 timeouts.

// linkWait is what a requester's local ACK timer waits for on such a
// link.
type linkWait struct {
	out    uint64 // frames the stack had sent when the timer was armed
	in     uint64 // frames sent towards the stack when a timeout was deferred for them
	inSeen bool   // in is set
}

// markWait records, when the timer is armed, what its request was queued
// behind.
func (s *Stack) markWait(w *linkWait) {
	*w = linkWait{}
	if s.backlog == nil {
		return
	}
	out, _ := s.backlog.Backlog()
	w.out = out.Sent
}

// deferTimeout reports whether a local ACK timeout is a receiver that
// has not run yet, not a loss.
func (s *Stack) deferTimeout(w *linkWait) bool {
	if s.backlog == nil {
		return false
	}
	out, in := s.backlog.Backlog()
	if out.Done < w.out {
		return true // the request has not reached the peer yet
	}
	if !w.inSeen {
		if in.Done >= in.Sent {
			return false
		}
		w.in, w.inSeen = in.Sent, true
		return true // an answer may be waiting for this stack to run
	}
	return in.Done < w.in
}

// backlogOf is the link's Backlogger, if it is one.
func backlogOf(l transport.Endpoint) transport.Backlogger {
	b, _ := l.(transport.Backlogger)
	return b
}
