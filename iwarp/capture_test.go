package iwarp

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rnic/rnic/iwarp/wire"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/stream"
	"github.com/rnic/rnic/transport/stream/streamcap"
	"github.com/rnic/rnic/transport/tsharktest"
)

// TestCaptureTshark captures one connection through the stream pcap tee:
// MPA negotiation, RTR, Sends, Writes, a multi-FPDU Read, an atomic, then a
// Terminate (bad STag) and the close, and has tshark dissect every TCP
// payload as MPA with good CRCs.
func TestCaptureTshark(t *testing.T) {
	for _, crc := range []bool{true, false} {
		name := "crc"
		if !crc {
			name = "nocrc"
		}
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "iwarp-"+name+".pcap")
			w, err := pcap.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			o := defaultOpts()
			o.noConnect = true
			o.sim.Chop, o.sim.Seed = 0.5, 11
			o.a.NoCRC, o.b.NoCRC = !crc, !crc
			h := newHarness(t, o)
			h.a.stack.cfg.Tee = func(c stream.Conn) stream.Conn {
				return streamcap.TeeConnWith(c, w, streamcap.TeeConfig{Now: transport.VirtualTimestamps(h.clk), NewFramer: func() streamcap.Framer { return NewCaptureFramer() }})
			}
			h.listen(o)
			h.connect(o)
			if h.result == nil || h.result.Err != nil {
				t.Fatalf("connect %+v", h.result)
			}
			a, b := h.a, h.b
			for i := range 5 {
				b.recv(uint64(i), i*5000, 5000)
				a.post(t, verbs.SendWR{ID: uint64(i), Opcode: verbs.WRSend, SGL: []verbs.SGE{a.sge(0, 3000+i)}})
			}
			a.post(t, verbs.SendWR{ID: 10, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 4000)}, RemoteAddr: b.va(100000), RKey: b.mr.RKey()})
			a.post(t, verbs.SendWR{ID: 11, Opcode: verbs.WRRDMARead, SGL: []verbs.SGE{a.sge(200000, 6000)}, RemoteAddr: b.va(0), RKey: b.mr.RKey()})
			a.post(t, verbs.SendWR{ID: 12, Opcode: verbs.WRAtomicFetchAdd, SGL: []verbs.SGE{a.sge(300000, 8)}, RemoteAddr: b.va(4096), RKey: b.mr.RKey(), CompareAdd: 1})
			a.recv(1, 0, 100)
			b.post(t, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{b.sge(0, 100)}})
			h.run()
			a.post(t, verbs.SendWR{ID: 13, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.sge(0, 100)}, RemoteAddr: b.va(0), RKey: b.mr.RKey() ^ 0x100})
			h.run()
			h.wantState(a, verbs.QPSErr)
			if h.b.stack.ctr.Get(TermSent) != 1 {
				t.Fatal("no Terminate")
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			tsharktest.Check(t, path, tsharktest.Options{RequireMPA: true})
			rows := tsharktest.Fields(t, path, tsharktest.Options{Filter: "iwarp_rdma"}, "iwarp_rdma.opcode")
			ops := map[string]int{}
			for _, r := range rows {
				ops[r["iwarp_rdma.opcode"]]++
			}
			t.Logf("RDMAP opcodes seen by tshark: %v", ops)
			for _, op := range []wire.Opcode{wire.OpWrite, wire.OpReadRequest, wire.OpReadResponse, wire.OpSend, wire.OpTerminate} {
				if ops[fmt.Sprintf("0x%02x", uint8(op))] == 0 {
					t.Errorf("tshark saw no %v (opcodes %v)", op, ops)
				}
			}
		})
	}
}
