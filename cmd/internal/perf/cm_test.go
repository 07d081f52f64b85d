package perf

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/rnic/rnic/transport"
)

// TestCMOneProcess runs every test in rdma_cm mode (-R), both sides in
// one process over an in-process link: the control connection carries
// perftest's exchange as SENDs and the data QPs connect through the CM.
func TestCMOneProcess(t *testing.T) {
	noSettle(t)
	for _, op := range []Op{OpWrite, OpRead, OpSend, OpAtomic} {
		for _, mode := range []Mode{ModeBW, ModeLat} {
			for _, qps := range []int{1, 2} {
				size := 4096
				if op == OpAtomic {
					size = 0
				}
				t.Run(fmt.Sprintf("%s %s qps %d", op, mode, qps), func(t *testing.T) {
					a, b := transport.NewPipe()
					var out bytes.Buffer
					cfg := Config{Op: op, Mode: mode, Size: size, QPs: qps, Iters: 100, MTU: 1024, RDMACM: true,
						TxDepth: 16, CQMod: 5, Link: b, ServerLink: a, Out: &out}
					res, err := Run(testCtx(t), cfg)
					if err != nil {
						t.Fatalf("%v\n%s", err, out.String())
					}
					if !res.RDMACM || res.Check.Skipped != skippedCM {
						t.Errorf("result: rdma_cm %v, check %+v", res.RDMACM, res.Check)
					}
					if mode == ModeLat {
						want := cfg.Iters * qps
						if op == OpWrite {
							want-- // the server writes first, as perftest's write_lat: one sample fewer
						}
						if l := res.Lat; l == nil || l.Samples != want || l.Min <= 0 {
							t.Errorf("latency figures %+v", l)
						}
					} else if b := res.BW; b == nil || b.AvgMBps <= 0 || b.Ops != int64(cfg.Iters*qps) {
						t.Errorf("bandwidth figures %+v", b)
					}
					if len(res.Client) != qps || len(res.Server) != qps {
						t.Fatalf("keys: %d client, %d server, want %d", len(res.Client), len(res.Server), qps)
					}
					for i := range qps {
						if res.Server[i].RKey == 0 || res.Server[i].VAddr == 0 || res.Client[i].QPN == res.Server[i].QPN && res.Client[i].QPN == 0 {
							t.Errorf("QP %d keys: client %+v server %+v", i, res.Client[i], res.Server[i])
						}
					}
					if !strings.Contains(out.String(), "Data ex. method : rdma_cm") {
						t.Errorf("table:\n%s", out.String())
					}
				})
			}
		}
	}
}

// TestCMRecordGolden parses the server's record of
// testdata/captures/rxe-write-bw-cm-4096.pcap (frame 33) and marshals it
// back.
func TestCMRecordGolden(t *testing.T) {
	b, _ := hex.DecodeString("0000000000000001000000220018aae600001559000000000000561b7103400000000000000000000000ffff0a4d000b0000000000000001")
	k, err := ParseCMRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if k.OutReads != 1 || k.QPN != 0x22 || k.PSN != 0x18aae6 || k.RKey != 0x1559 || k.VAddr != 0x561b71034000 ||
		k.GID[10] != 0xff || k.GID[12] != 10 || k.GID[15] != 11 {
		t.Fatalf("parsed %+v", k)
	}
	m := marshalCMRecord(k, 1)
	if !bytes.Equal(m[:], b) {
		t.Fatalf("marshalled\n%x\nwant\n%x", m, b)
	}
	if _, err := ParseCMRecord(b[:55]); err == nil {
		t.Fatal("a 55-byte record parsed")
	}
}

func FuzzParseCMRecord(f *testing.F) {
	f.Add(make([]byte, cmRecordSize))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParseCMRecord(b)
		if err != nil {
			return
		}
		m := marshalCMRecord(k, 0)
		if k2, err := ParseCMRecord(m[:]); err != nil || k2 != k {
			t.Fatalf("round trip %+v → %+v (%v)", k, k2, err)
		}
	})
}

// TestCMIWARPOneProcess runs rdma_cm mode over iWARP on kernel TCP
// loopback, both sides in one process: the MPA connections, the SENDs on
// the control QP and, in the SEND bw test, perftest's credits (more
// messages than the receive depth, so the sender must wait for them).
func TestCMIWARPOneProcess(t *testing.T) {
	noSettle(t)
	for _, c := range []struct {
		op    Op
		mode  Mode
		iters int
	}{{OpWrite, ModeBW, 100}, {OpRead, ModeBW, 100}, {OpSend, ModeBW, 400}, {OpWrite, ModeLat, 50},
		{OpRead, ModeLat, 50}, {OpSend, ModeLat, 50}} {
		t.Run(fmt.Sprintf("%s %s", c.op, c.mode), func(t *testing.T) {
			var out bytes.Buffer
			cfg := Config{Op: c.op, Mode: c.mode, Size: 4096, Iters: c.iters, IWARP: true, RDMACM: true,
				RxDepth: 30, Out: &out}
			res, err := Run(testCtx(t), cfg)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if !res.IWARP || !res.RDMACM {
				t.Errorf("result: iwarp %v rdma_cm %v", res.IWARP, res.RDMACM)
			}
			if c.mode == ModeLat {
				if l := res.Lat; l == nil || l.Samples < c.iters-1 || l.Min <= 0 {
					t.Errorf("latency figures %+v", l)
				}
			} else if b := res.BW; b == nil || b.AvgMBps <= 0 || b.Ops != int64(c.iters) {
				t.Errorf("bandwidth figures %+v", b)
			}
			if c.op == OpSend && c.mode == ModeBW && res.Client[0].RKey == res.Server[0].RKey && res.Client[0].VAddr == res.Server[0].VAddr {
				t.Errorf("credit words: client %+v server %+v", res.Client[0], res.Server[0])
			}
		})
	}
}

// noSettle drops the client's wait before its first message for this
// test: both sides are rnic's, which post their receives first.
func noSettle(t *testing.T) {
	old := cmSettle
	cmSettle = 0
	t.Cleanup(func() { cmSettle = old })
}

// TestCMIWARPParam: in rdma_cm mode over iWARP the MPA frames carry IRD and
// ORD as siw's perftest does (testdata/captures/siw-*-bw-4096.pcap): 0 on
// the control connection and on a WRITE test's data QPs, 128 on a READ
// test's, taken as given rather than raised to rdma_cm's default 1.
func TestCMIWARPParam(t *testing.T) {
	for _, c := range []struct {
		op   Op
		data bool
		want uint8
	}{{OpWrite, false, 0}, {OpWrite, true, 0}, {OpSend, true, 0}, {OpRead, false, 0}, {OpRead, true, 128}, {OpAtomic, true, 128}} {
		p := iwarpCMParam(&resolved{Config: Config{Op: c.op}}, c.data)
		if !p.ExactIRDORD || p.ResponderResources != c.want || p.InitiatorDepth != c.want {
			t.Errorf("%s data %v: %+v, want IRD = ORD = %d as given", c.op, c.data, p, c.want)
		}
	}
}
