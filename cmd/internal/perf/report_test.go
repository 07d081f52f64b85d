package perf

import (
	"strings"
	"testing"
)

// TestAddrLinesGolden prints the client QP of
// testdata/captures/logs/rxe-write-bw-4096.log as perftest did, and the
// READ and SEND variants.
func TestAddrLinesGolden(t *testing.T) {
	for _, c := range []struct {
		op   Op
		want string
	}{
		{OpWrite, " local address: LID 0000 QPN 0x0014 PSN 0x147ede RKey 0x000544 VAddr 0x005583d975a000\n"},
		{OpRead, " local address: LID 0000 QPN 0x0014 PSN 0x147ede OUT 0x80 RKey 0x000544 VAddr 0x005583d975a000\n"},
		{OpSend, " local address: LID 0000 QPN 0x0014 PSN 0x147ede\n"},
	} {
		var b strings.Builder
		writeAddr(&b, "local", goldenKey, c.op)
		want := c.want + " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:12\n"
		if b.String() != want {
			t.Errorf("%s:\n%q\nwant\n%q", c.op, b.String(), want)
		}
	}
}

func TestTitles(t *testing.T) {
	for _, c := range []struct {
		res  Result
		want string
	}{
		{Result{Op: OpWrite, Mode: ModeBW}, "RDMA_Write BW Test"},
		{Result{Op: OpRead, Mode: ModeBW}, "RDMA_Read BW Test"},
		{Result{Op: OpSend, Mode: ModeBW}, "Send BW Test"},
		{Result{Op: OpAtomic, Mode: ModeBW, AtomicType: CmpAndSwap}, "Atomic CMP_AND_SWAP BW Test"},
		{Result{Op: OpWrite, Mode: ModeLat}, "RDMA_Write Latency Test"},
	} {
		if got := title(&c.res); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
