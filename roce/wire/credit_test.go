package wire

import "testing"

// creditCodeScan is CreditCode by reading the whole table: the reference
// the search must agree with, and the baseline of its benchmark.
func creditCodeScan(n int) uint8 {
	code := uint8(0)
	for i, c := range creditTable {
		if int(c) <= n {
			code = uint8(i)
		}
	}
	return code
}

func TestCreditCodeAgreesWithScan(t *testing.T) {
	for n := -2; n <= 40000; n++ {
		if got, want := CreditCode(n), creditCodeScan(n); got != want {
			t.Fatalf("CreditCode(%d) = %d, the table says %d", n, got, want)
		}
	}
}

// BenchmarkCreditCode: the search against the scan, over the counts a
// responder has (every ACK computes one).
func BenchmarkCreditCode(b *testing.B) {
	for _, f := range []struct {
		name string
		code func(int) uint8
	}{{"search", CreditCode}, {"scan", creditCodeScan}} {
		b.Run(f.name, func(b *testing.B) {
			var sink uint8
			n := 0
			for b.Loop() {
				sink ^= f.code(n)
				n = (n + 37) & 0x3FFF
			}
			_ = sink
		})
	}
}
