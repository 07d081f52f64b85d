package demo

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/roce/capcheck"
	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
)

func TestDemoOverPipe(t *testing.T) {
	la, lb := transport.NewPipe()
	var out, capture bytes.Buffer
	pw, err := embedded.NewPcapWriter(&capture)
	if err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), Config{LinkA: la, LinkB: lb,
		AddrA: netip.MustParseAddr("192.0.2.1"), AddrB: netip.MustParseAddr("192.0.2.2"),
		MACA: [6]byte{2, 0, 0, 0, 0, 1}, MACB: [6]byte{2, 0, 0, 0, 0, 2}, Pcap: pw, Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	pw.Close()
	s := out.String()
	for _, want := range []string{"demo: 8 steps, 8 behaved as specified", "RC RDMA WRITE First", "RC RDMA READ Response Last",
		"RC ATOMIC Acknowledge", "UD SEND Only", "NAK remote access error", "REM_ACCESS_ERR"} {
		if !strings.Contains(s, want) {
			t.Errorf("narration lacks %q", want)
		}
	}
	// Every frame of the capture decodes and its ICRC verifies.
	frames, err := pcap.ReadFrom(&capture)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) < 20 {
		t.Fatalf("only %d frames captured", len(frames))
	}
	for i, fr := range frames {
		var f wire.Frame
		if err := f.Decode(fr.Data, 0); err != nil || !f.VerifyICRC() {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	checkCausal(t, frames)
	if testing.Verbose() {
		t.Log(s)
	}
}

// checkCausal fails t if a response in the capture precedes its request
// or a timestamp goes back (roce/capcheck).
func checkCausal(t *testing.T, frames []pcap.Frame) {
	t.Helper()
	res := capcheck.Check(frames, 0)
	if res.Responses == 0 {
		t.Fatal("the causality check found no responses to check")
	}
	for _, v := range res.Violations {
		t.Errorf("capture out of causal order: %v", v)
	}
}
