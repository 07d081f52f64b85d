// The requester's congestion window: how many PSNs a QP keeps
// unacknowledged. IBTA bounds it only from above (the responder's credits,
// the stack's Window); a requester may always send less. rnic's link is a
// kernel UDP socket without link-level flow control (no PFC), so when many
// QPs each go back N after a loss, their resends overflow the peer's
// socket again and every QP exhausts retry_cnt together (100 QPs of 64
// KiB WRITEs did). So a QP halves its window at each resend and starts
// again from one packet after a local ACK timeout, and grows it back as
// ACKs advance, as TCP does: slowly above half the window it last lost
// at, doubling per round trip below. A new QP starts with the whole
// Window: starting smaller (a share of 1,024 packets among the stack's
// QPs) let 1,000 QPs of 64 KiB WRITEs run, but made 3,000 QPs of 4 KiB
// WRITEs ask an ACK for every packet and starve the requester's receive
// path of CPU, so it was left out.

package roce

import "github.com/rnic/rnic/roce/wire"

// window is the number of PSNs the requester may have unacknowledged.
func (r *requester) window() int {
	if r.cwnd == 0 {
		return r.qp.s.cfg.Window
	}
	return r.cwnd
}

// windowFull reports whether the next PSN must wait for an ACK.
func (r *requester) windowFull() bool {
	return int(wire.PSNDiff(r.psn, r.unacked)) >= r.window()
}

// lossWindow halves the window on a resend (a sequence-error NAK, an
// implied NAK, a timeout).
func (r *requester) lossWindow() {
	if r.qp.s.cfg.FixedWindow {
		return
	}
	r.ssthresh = max(r.window()/2, 1)
	r.cwnd, r.grown = r.ssthresh, 0
}

// timeoutWindow restarts from one packet after a local ACK timeout: the
// loss was not noticed by the peer's NAKs, so the path is congested.
func (r *requester) timeoutWindow() {
	if !r.qp.s.cfg.FixedWindow {
		r.cwnd, r.grown = 1, 0
	}
}

// growWindow accounts for n newly acknowledged PSNs: a reduced window
// grows by n below ssthresh and by one per window's worth above it, and is
// back to the stack's Window once it reaches it.
func (r *requester) growWindow(n int) {
	if r.cwnd == 0 || n <= 0 {
		return
	}
	if r.cwnd < r.ssthresh {
		r.cwnd += n
	} else {
		r.grown += n
		for r.grown >= r.cwnd {
			r.grown -= r.cwnd
			r.cwnd++
		}
	}
	if r.cwnd >= r.qp.s.cfg.Window {
		r.cwnd, r.grown = 0, 0
	}
}
