package perf

// rdma_cm mode (-R) on rnicd's NICs: a test daemon (nic/rnicd/rnicdtest)
// serves embedded NICs in this process, perf opens them through the real
// rnicd client (NAME@SOCKET) and connects its QPs with the daemon's
// rdma_cm (ibv.ConnManager), as `rnic perf -R -d rnic0@SOCK` does.

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"

	"github.com/rnic/rnic/nic/embedded"
	_ "github.com/rnic/rnic/nic/rnicd/client" // NAME@SOCKET devices
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/roce"
)

// TestCMThroughRnicd: a server and a client, each a client of one daemon
// on a NIC of its own, run write_bw and send_lat in rdma_cm mode. Both
// CMs ran on the daemon's QP1s (MADs counted there), the data QPs'
// packets crossed the daemon's NICs, every operation was counted, the
// records name the daemon NICs' addresses, and perf's own data check is
// skipped, as in every -R run (the exchange is perftest's).
func TestCMThroughRnicd(t *testing.T) {
	noSettle(t)
	for _, c := range []struct {
		op    Op
		mode  Mode
		size  int
		qps   int
		iters int
	}{
		{OpWrite, ModeBW, 4096, 2, 200},
		{OpSend, ModeLat, 64, 1, 200},
	} {
		t.Run(fmt.Sprintf("%s %s", c.op, c.mode), func(t *testing.T) {
			d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2, MTU: 9000})
			srvNIC, cliNIC := d.NICs[0], d.NICs[1]
			ctx := testCtx(t)
			var srvOut, cliOut bytes.Buffer
			type ret struct {
				res *Result
				err error
			}
			srv := make(chan ret, 1)
			go func() {
				res, err := Run(ctx, Config{Serve: true, RDMACM: true, Op: c.op, Mode: c.mode, Size: c.size,
					QPs: c.qps, Iters: c.iters, IBDev: d.Spec(0).String(), Out: &srvOut})
				srv <- ret{res, err}
			}()
			cfg := Config{RDMACM: true, Op: c.op, Mode: c.mode, Size: c.size, QPs: c.qps, Iters: c.iters,
				IBDev: d.Spec(1).String(), Server: srvNIC.Addr.String(), Out: &cliOut}
			res, err := Run(ctx, cfg)
			s := <-srv
			if err != nil || s.err != nil {
				t.Fatalf("client %v\n%s\nserver %v\n%s", err, cliOut.String(), s.err, srvOut.String())
			}
			for _, r := range []*Result{res, s.res} {
				if !r.RDMACM || r.Check.Skipped != skippedCM || len(r.Client) != c.qps || len(r.Server) != c.qps {
					t.Errorf("result: rdma_cm %v, check %+v, %d/%d keys", r.RDMACM, r.Check, len(r.Client), len(r.Server))
				}
			}
			if c.mode == ModeBW {
				if b := res.BW; b == nil || b.AvgMBps <= 0 || b.Ops != int64(c.iters*c.qps) {
					t.Errorf("client bandwidth figures %+v", b)
				}
				if b := s.res.BW; b == nil || b.AvgMBps <= 0 {
					t.Errorf("server bandwidth figures (the client's report) %+v", b)
				}
			} else {
				if l := res.Lat; l == nil || l.Samples != c.iters*c.qps || l.Min <= 0 {
					t.Errorf("client latency figures %+v", l)
				}
				if s.res.Lat == nil {
					t.Errorf("no server latency figures")
				}
			}
			if len(res.Client) == c.qps && len(res.Server) == c.qps {
				if g := netip.AddrFrom16(res.Client[0].GID).Unmap(); g != cliNIC.Addr {
					t.Errorf("client record's GID %v, want its daemon NIC's %v", g, cliNIC.Addr)
				}
				if g := netip.AddrFrom16(res.Server[0].GID).Unmap(); g != srvNIC.Addr {
					t.Errorf("server record's GID %v, want its daemon NIC's %v", g, srvNIC.Addr)
				}
			}
			// The REQ/REP/RTU and DREQ/DREP of two connections per side
			// (the control QP's and the data QPs') went through the
			// daemon's CMs.
			for _, n := range []*embedded.NIC{srvNIC, cliNIC} {
				ctr := n.Stack.Counters()
				if got := ctr.Get(roce.GSIRcvdMADs); got < uint64(1+c.qps) {
					t.Errorf("NIC %s received %d MADs on QP1, want the CM's (at least %d)", n.Name(), got, 1+c.qps)
				}
			}
			// Every message's packets reached the daemon's server NIC
			// (send_lat: and the client's).
			want := uint64(c.iters * c.qps * ((c.size + 4095) / 4096))
			if got := srvNIC.Stack.Counters().Get(roce.RcvdPkts); got < want {
				t.Errorf("server NIC accepted %d packets, want at least %d", got, want)
			}
			if c.mode == ModeLat {
				if got := cliNIC.Stack.Counters().Get(roce.RcvdPkts); got < want {
					t.Errorf("client NIC accepted %d packets, want at least %d", got, want)
				}
			}
		})
	}
}

// TestCMOnOneRnicdNIC: both sides in one process on one daemon NIC, the
// server's CM listening on a free port of it (so runs sharing a daemon
// do not collide on perftest's), the client connecting to its own
// address.
func TestCMOnOneRnicdNIC(t *testing.T) {
	noSettle(t)
	d := rnicdtest.Start(t, rnicdtest.Options{MTU: 9000})
	var out bytes.Buffer
	cfg := Config{RDMACM: true, Op: OpRead, Mode: ModeBW, Size: 8192, Iters: 100, IBDev: d.Spec(0).String(), Out: &out}
	res, err := Run(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if b := res.BW; !res.RDMACM || b == nil || b.AvgMBps <= 0 || b.Ops != int64(cfg.Iters) {
		t.Errorf("result: rdma_cm %v, bandwidth %+v", res.RDMACM, res.BW)
	}
	if got := d.NICs[0].Stack.Counters().Get(roce.GSIRcvdMADs); got < 4 {
		t.Errorf("the daemon NIC received %d MADs on QP1, want both sides' CM messages", got)
	}
}
