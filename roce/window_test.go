package roce

import "testing"

// TestCongestionWindow: a new QP starts at its share of startBudget,
// doubles per window acknowledged up to the stack's Window, halves on a
// resend, restarts at one packet after a timeout and grows by one per
// window above ssthresh.
func TestCongestionWindow(t *testing.T) {
	s := &Stack{cfg: Config{Window: 128}}
	qp := &QP{s: s}
	r := &qp.req
	r.qp = qp
	want := func(what string, w int) {
		t.Helper()
		if got := r.window(); got != w {
			t.Fatalf("%s: window %d, want %d", what, got, w)
		}
	}
	s.nQPs.Store(1)
	r.setPSN(0)
	want("start, one QP", initialWindow)
	r.growWindow(16)
	want("16 acknowledged in slow start", 32)
	r.growWindow(200)
	want("past the stack's Window", 128)
	r.lossWindow()
	want("a resend", 64)
	r.timeoutWindow()
	want("a timeout", 1)
	for _, w := range []int{2, 4, 8, 16, 32, 64} {
		r.growWindow(r.window())
		want("slow start back to ssthresh", w)
	}
	r.growWindow(63)
	want("63 of a window of 64 above ssthresh", 64)
	r.growWindow(1)
	want("a whole window above ssthresh", 65)

	s.nQPs.Store(10000)
	r.setPSN(0)
	want("start among 10,000 QPs", 1)
	s.nQPs.Store(100)
	r.setPSN(0)
	want("start among 100 QPs", startBudget/100)
}
