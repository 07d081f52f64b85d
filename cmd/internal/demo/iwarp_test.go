package demo

import (
	"bytes"
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/tsharktest"
)

// TestIWARPDemo runs the iWARP demo over kernel TCP on loopback and has
// tshark dissect the capture as MPA from the SYN.
func TestIWARPDemo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "iwarp-demo.pcap")
	pw, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = RunIWARP(context.Background(), IWARPConfig{AddrA: netip.MustParseAddr("127.0.0.52"), AddrB: netip.MustParseAddr("127.0.0.53"),
		Port: 18515, Pcap: pw, Out: &out})
	if cerr := pw.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{"demo: 6 steps, 6 behaved as specified", "MPA Request", "MPA Reply", "(zero-length: RTR)",
		"RDMA Write", "RDMA Read Request", "RDMA Read Response", "Atomic Request", "Atomic Response", "Send with Invalidate",
		"Terminate", "invalid STag", "REM_ACCESS_ERR"} {
		if !strings.Contains(s, want) {
			t.Errorf("narration lacks %q", want)
		}
	}
	if n := strings.Count(s, "  ok\n"); n != 6 {
		t.Errorf("%d steps ok, want 6", n)
	}
	tsharktest.Check(t, path, tsharktest.Options{RequireMPA: true})
	rows := tsharktest.Fields(t, path, tsharktest.Options{Filter: "iwarp_rdma"}, "iwarp_rdma.opcode")
	ops := map[string]int{}
	for _, r := range rows {
		ops[r["iwarp_rdma.opcode"]]++
	}
	for _, op := range []string{"0x00", "0x01", "0x02", "0x03", "0x04", "0x07", "0x0a", "0x0b"} {
		if ops[op] == 0 {
			t.Errorf("tshark saw no RDMAP opcode %s (opcodes %v)", op, ops)
		}
	}
	if testing.Verbose() {
		t.Log(s)
	}
}
