package rping

import (
	"encoding/hex"
	"strings"
	"testing"
)

// The ping data of testdata/captures/siw-rping.pcap: frame 12 (ping 0's READ
// Response) and frame 20 (ping 1's), 64 bytes each.
var capturePings = []string{
	"72646d612d70696e672d303a204142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f70717200",
	"72646d612d70696e672d313a2042434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f7071727300",
}

func TestFillPingMatchesCapture(t *testing.T) {
	for n, h := range capturePings {
		want, _ := hex.DecodeString(h)
		got := make([]byte, 64)
		FillPing(got, n)
		if string(got) != string(want) {
			t.Errorf("ping %d:\n got %q\nwant %q", n, got, want)
		}
	}
}

func TestFillPingLog(t *testing.T) {
	// testdata/captures/logs/siw-rping.log: ping 9 wraps past 'z' back to 'A'.
	got := make([]byte, 64)
	FillPing(got, 9)
	if want := "rdma-ping-9: JKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyzA"; string(cString(got)) != want {
		t.Fatalf("ping 9 = %q, want %q", cString(got), want)
	}
}

func TestFillPingRun(t *testing.T) {
	// The start character cycles through the 58 characters 'A'..'z'.
	for _, c := range []struct {
		n     int
		start byte
	}{{0, 'A'}, {57, 'z'}, {58, 'A'}, {59, 'B'}, {1000, 'A' + 1000%58}} {
		b := make([]byte, MinSize+100)
		FillPing(b, c.n)
		pre := "rdma-ping-" + itoa(c.n) + ": "
		if !strings.HasPrefix(string(b), pre) || b[len(pre)] != c.start || b[len(b)-1] != 0 {
			t.Fatalf("ping %d: %q", c.n, b)
		}
		for i := len(pre) + 1; i < len(b)-1; i++ {
			want := b[i-1] + 1
			if b[i-1] == 'z' {
				want = 'A'
			}
			if b[i] != want {
				t.Fatalf("ping %d: byte %d is %q after %q", c.n, i, b[i], b[i-1])
			}
		}
	}
	// The largest prefix fits the smallest buffer.
	b := make([]byte, MinSize)
	FillPing(b, 2147483647)
	if got := string(cString(b)); got != "rdma-ping-2147483647: HIJ" { // 2147483647 % 58 = 7
		t.Fatalf("MinSize ping = %q", got)
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}
