// Waiting for completions, and checking them and the bytes they moved.

package ibvtest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

const (
	// waitTimeout bounds every wait for a completion or an event: far
	// above what any loopback exchange takes, even with retransmissions.
	waitTimeout = 20 * time.Second
	// repoll is how often a wait polls again when no notification came, so
	// that a backend whose CQ events are broken fails CQ/Notify alone
	// rather than every test.
	repoll = 20 * time.Millisecond
)

// waitWC returns the next n completions of cq, waiting as a verbs program
// does (poll, arm, poll again, wait for the event), and fails the test if
// they do not all come within waitTimeout.
func waitWC(t *testing.T, cq ibv.CQ, n int) []verbs.WC {
	t.Helper()
	wcs := make([]verbs.WC, n)
	got := 0
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(repoll)
	defer tick.Stop()
	for {
		got += cq.Poll(wcs[got:])
		if got == n {
			return wcs
		}
		if err := cq.ReqNotify(false); err != nil {
			t.Fatalf("ReqNotify: %v", err)
		}
		// A completion that came before the arm fires nothing.
		if got += cq.Poll(wcs[got:]); got == n {
			return wcs
		}
		select {
		case <-cq.Notify():
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("%d of %d completions after %v: %+v", got, n, waitTimeout, wcs[:got])
		}
	}
}

// waitOne returns the next completion of cq.
func waitOne(t *testing.T, cq ibv.CQ) verbs.WC {
	t.Helper()
	return waitWC(t, cq, 1)[0]
}

// checkWC checks a completion's WR ID and status and, for a successful one
// (libibverbs defines the opcode of those only), its opcode.
func checkWC(t *testing.T, what string, wc verbs.WC, id uint64, status verbs.WCStatus, op verbs.WCOpcode) {
	t.Helper()
	if wc.WRID == id && wc.Status == status && (status != verbs.WCSuccess || wc.Opcode == op) {
		return
	}
	want := fmt.Sprintf("wr %d, %v", id, status)
	if status == verbs.WCSuccess {
		want += ", " + op.String()
	}
	t.Fatalf("%s: completion {wr %d, %v, %v}, want {%s} (%+v)", what, wc.WRID, wc.Status, wc.Opcode, want, wc)
}

// noWC checks that cq holds no completion now.
func noWC(t *testing.T, what string, cq ibv.CQ) {
	t.Helper()
	var wc [1]verbs.WC
	if cq.Poll(wc[:]) != 0 {
		t.Fatalf("%s: unexpected completion %+v", what, wc[0])
	}
}

// fill writes a pattern that differs with seed and along the buffer (no
// two neighbouring bytes equal, no period of 256), so a shifted, truncated
// or misplaced copy shows.
func fill(b []byte, seed int) {
	for i := range b {
		b[i] = byte(i + i>>8 + seed*37 + 1)
	}
}

// pattern returns n bytes of fill's pattern.
func pattern(n, seed int) []byte {
	b := make([]byte, n)
	fill(b, seed)
	return b
}

// checkBytes fails the test unless got equals want, naming the first byte
// that differs.
func checkBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d bytes, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: byte %d of %d is %#02x, want %#02x", what, i, len(got), got[i], want[i])
		}
	}
}

// checkFilled fails the test unless every byte of b is c (memory nothing
// may touch).
func checkFilled(t *testing.T, what string, b []byte, c byte) {
	t.Helper()
	for i, x := range b {
		if x != c {
			t.Fatalf("%s: byte %d of %d is %#02x, want it untouched (%#02x)", what, i, len(b), x, c)
		}
	}
}

// memset sets every byte of b to c.
func memset(b []byte, c byte) {
	for i := range b {
		b[i] = c
	}
}
