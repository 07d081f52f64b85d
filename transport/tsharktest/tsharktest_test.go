package tsharktest

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/rnic/rnic/roce/wire"
)

// recorder is a testing.TB that collects Errorf calls instead of failing,
// so the oracle's own failures can be checked.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Helper() {}

func frame(t *testing.T, v6 bool, csum wire.ChecksumMode, payload string) []byte {
	t.Helper()
	e := wire.Encap{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
		TTL: 64, DF: true, SrcPort: 49152, DstPort: wire.UDPPort, UDPChecksum: csum}
	if v6 {
		e.Src, e.Dst = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	}
	h := wire.Headers{BTH: wire.BTHFields{Opcode: wire.RCSendOnly, PKey: wire.DefaultPKey, DestQP: 0x11, PSN: 5}}
	return wire.AppendFrame(nil, &e, &h, []byte(payload))
}

func TestCheckClean(t *testing.T) {
	// "hello" would be taken for RPC-over-RDMA (and flagged malformed) if
	// the payload heuristics were on.
	p := WritePcap(t, "clean.pcap", [][]byte{
		frame(t, false, wire.ChecksumAuto, "hello"),
		frame(t, true, wire.ChecksumAuto, "hello"),
	})
	Check(t, p, Options{})
	rows := Fields(t, p, Options{}, "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "data.len")
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(rows))
	}
	for _, r := range rows {
		if op, _ := r.Int("infiniband.bth.opcode"); op != uint64(wire.RCSendOnly) {
			t.Errorf("frame %s: opcode %v", r["frame.number"], r["infiniband.bth.opcode"])
		}
		if qp, _ := r.Int("infiniband.bth.destqp"); qp != 0x11 {
			t.Errorf("frame %s: destqp %v", r["frame.number"], r["infiniband.bth.destqp"])
		}
		if psn, _ := r.Int("infiniband.bth.psn"); psn != 5 {
			t.Errorf("frame %s: psn %v", r["frame.number"], r["infiniband.bth.psn"])
		}
		// The payload tshark shows includes the pad (README.md, "RoCEv2").
		if n, _ := r.Int("data.len"); n != 8 {
			t.Errorf("frame %s: data.len %v, want 8 (5 bytes + pad 3)", r["frame.number"], r["data.len"])
		}
	}
}

func TestCheckCatches(t *testing.T) {
	good := frame(t, false, wire.ChecksumAuto, "abcd")
	cut := good[:wire.EthLen+wire.IPv4Len+wire.UDPLen+8] // BTH cut short, IP lengths now wrong
	p := WritePcap(t, "bad.pcap", [][]byte{
		good,
		cut,
		frame(t, true, wire.ChecksumZero, "abcd"), // IPv6 with UDP checksum 0: illegal
	})
	r := &recorder{TB: t}
	Check(r, p, Options{})
	joined := strings.Join(r.errs, "\n")
	t.Logf("oracle said:\n%s", joined)
	for _, want := range []string{"malformed: frame 2", "expert info >= warning: frame 3"} {
		if !strings.Contains(joined, want) {
			t.Errorf("oracle did not report %q", want)
		}
	}
	if strings.Contains(joined, "frame 1:") {
		t.Errorf("oracle flagged the good frame")
	}
}

func TestVersion(t *testing.T) {
	maj, min, patch := Version(t)
	t.Logf("tshark %d.%d.%d", maj, min, patch)
	if maj < 3 {
		t.Errorf("tshark %d.%d.%d is older than the oracle was written for (4.0)", maj, min, patch)
	}
}
