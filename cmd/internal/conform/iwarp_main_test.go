package conform

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/cmd/internal/conform/agent"
)

// TestIWARPMain runs `rnic conform run --transport iwarp` as the CLI does
// (Main) against an agent whose own NIC speaks iWARP, and reads its JSON
// report back.
func TestIWARPMain(t *testing.T) {
	dutA, testA := netip.MustParseAddr("127.0.87.2"), netip.MustParseAddr("127.0.87.3")
	dev, err := agent.OpenDevice(agent.DeviceOptions{Device: "rnic0", Addr: dutA, IWARP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	srv, err := agent.Listen(agent.Config{Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go srv.Serve()
	rep, err := Main(context.Background(), Options{Agent: srv.Addr().String(), UDP: testA, Transport: IWARP, Only: "RFC5041-7.2/tagged"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	if got.DUT.Transport != "iwarp" || got.Summary.Cases != 5 || got.Summary.Pass != 5 {
		t.Fatalf("DUT %s, summary %+v, want 5 iWARP cases passed", got.DUT.Transport, got.Summary)
	}
	for _, r := range got.Results {
		if r.Transport != IWARP || r.Evidence == "" {
			t.Errorf("%s: transport %s, evidence %q", r.ID, r.Transport, r.Evidence)
		}
	}
}
