package layers_test

import (
	"bytes"
	"testing"

	"github.com/rnic/rnic/roce/wire"
	"github.com/rnic/rnic/transport/tsharktest"
)

// TestTsharkOracle: frames built with gopacket.SerializeLayers and SealICRC,
// every opcode over every encapsulation, dissect cleanly in tshark (no
// malformed frame, no expert warning with UDP checksums checked, every frame
// RRoCE) with the BTH fields that were serialized. roce/wire's oracle test
// covers the extension-header fields and tshark's unknown opcodes in depth;
// the two encoders produce identical bytes (TestSerialize).
func TestTsharkOracle(t *testing.T) {
	tsharktest.Path(t)
	var frames [][]byte
	var hdrs []wire.Headers
	seed := 0
	for _, op := range validOpcodes() {
		for _, c := range encapCases {
			seed++
			e := c.encap(seed)
			e.UDPChecksum = wire.ChecksumAuto
			h := testHeaders(op, seed)
			n := seed % 5
			if !op.Info().Payload {
				n = 0
			}
			if fp := op.Info().FixedPayload; fp != 0 {
				n = fp
			}
			frames = append(frames, gopacketFrame(t, &e, &h, bytes.Repeat([]byte{0xA5}, n)))
			hdrs = append(hdrs, h)
		}
	}
	pcap := tsharktest.WritePcap(t, "gopacket-all-opcodes.pcap", frames)
	tsharktest.Check(t, pcap, tsharktest.Options{})
	rows := tsharktest.Fields(t, pcap, tsharktest.Options{},
		"_ws.col.Protocol", "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn")
	if len(rows) != len(frames) {
		t.Fatalf("tshark returned %d frames, wrote %d", len(rows), len(frames))
	}
	for i, r := range rows {
		h := hdrs[i].BTH
		op, _ := r.Int("infiniband.bth.opcode")
		qp, _ := r.Int("infiniband.bth.destqp")
		psn, _ := r.Int("infiniband.bth.psn")
		if r["_ws.col.Protocol"] != "RRoCE" || op != uint64(h.Opcode) || qp != uint64(h.DestQP) || psn != uint64(h.PSN) {
			t.Errorf("frame %d: tshark %v, sent opcode %d qp %#x psn %d", i+1, r, h.Opcode, h.DestQP, h.PSN)
		}
	}
}
