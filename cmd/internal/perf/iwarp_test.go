package perf

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"testing"
)

// TestIWARPRuns: short iWARP runs of every operation in both modes over
// kernel TCP on loopback, data verified, with the raw TCP figure.
func TestIWARPRuns(t *testing.T) {
	for _, mode := range []Mode{ModeBW, ModeLat} {
		for _, op := range []Op{OpWrite, OpRead, OpSend, OpAtomic} {
			t.Run(string(op)+"_"+string(mode), func(t *testing.T) {
				var out bytes.Buffer
				cfg := Config{IWARP: true, Op: op, Mode: mode, Iters: 200, QPs: 2, Out: &out,
					ServerAddr: netip.MustParseAddr("127.0.0.56"), Addr: netip.MustParseAddr("127.0.0.57")}
				if op != OpAtomic {
					cfg.Size = 5000
				}
				if mode == ModeBW && op == OpSend {
					cfg.RxDepth = 16 // the client must wait for the server's receives
				}
				res, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatalf("%v\n%s", err, out.String())
				}
				if !res.Check.OK() || res.Raw == nil || res.Raw.Ratio <= 0 {
					t.Fatalf("check %+v raw %+v %s\n%s", res.Check, res.Raw, res.RawError, out.String())
				}
				s := out.String()
				for _, want := range []string{"Transport type : IW", "raw tcp: ", "rnic/raw = "} {
					if !strings.Contains(s, want) {
						t.Errorf("report lacks %q:\n%s", want, s)
					}
				}
			})
		}
	}
}
