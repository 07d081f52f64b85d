package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rnic/rnic/cmd/internal/loopback"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// checkResult checks what every run must show: positive figures and data
// that really moved.
func checkResult(t *testing.T, cfg Config, res *Result) {
	t.Helper()
	if !res.Check.OK() {
		t.Errorf("data check: %+v", res.Check)
	}
	switch cfg.Mode {
	case ModeLat:
		l := res.Lat
		if l == nil || l.Samples != cfg.Iters*max(cfg.QPs, 1) || l.Min <= 0 || l.Typical < l.Min || l.Max < l.P999 || l.P999 < l.P99 || l.Avg <= 0 {
			t.Errorf("latency figures %+v", l)
		}
	default:
		b := res.BW
		if b == nil || b.AvgMBps <= 0 || b.PeakMBps <= 0 || b.MsgRateMpps <= 0 || b.Ops != int64(cfg.Iters*max(cfg.QPs, 1)) {
			t.Errorf("bandwidth figures %+v", b)
		}
	}
	if res.Raw == nil || res.Raw.Ratio <= 0 {
		t.Errorf("raw UDP: %+v %s", res.Raw, res.RawError)
	}
}

// TestOneProcessOverPipe runs every operation in both modes, both sides in
// one process, over an in-process link.
func TestOneProcessOverPipe(t *testing.T) {
	for _, op := range []Op{OpWrite, OpRead, OpSend, OpAtomic} {
		for _, mode := range []Mode{ModeBW, ModeLat} {
			for _, c := range []struct {
				size, qps int
				atomic    AtomicType
			}{{size: 4096, qps: 1}, {size: 10000, qps: 3, atomic: CmpAndSwap}} {
				if op == OpAtomic {
					c.size = 0
				}
				name := fmt.Sprintf("%s %s size %d qps %d %s", op, mode, c.size, c.qps, c.atomic)
				t.Run(name, func(t *testing.T) {
					a, b := transport.NewPipe()
					var out bytes.Buffer
					cfg := Config{Op: op, Mode: mode, Size: c.size, QPs: c.qps, Iters: 200, MTU: 1024,
						AtomicType: c.atomic, TxDepth: 16, CQMod: 5, Link: b, ServerLink: a, Out: &out}
					res, err := Run(testCtx(t), cfg)
					if err != nil {
						t.Fatalf("%v\n%s", err, out.String())
					}
					checkResult(t, cfg, res)
					checkTable(t, cfg, out.String())
					if testing.Verbose() {
						t.Log("\n" + out.String())
					}
				})
			}
		}
	}
}

// checkTable checks the shape of the printed report.
func checkTable(t *testing.T, cfg Config, out string) {
	t.Helper()
	num := `\d+\.\d\d`
	var row *regexp.Regexp
	if cfg.Mode == ModeLat {
		row = regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(latHead) + ` \d+ +200 +` + strings.Repeat(num+`\s+`, 6) + num + `\s*$`)
	} else {
		row = regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(bwHead) + ` \d+ +200 +` + num + ` +` + num + ` *\t\t   \d+\.\d{6}\s*$`)
	}
	if !row.MatchString(out) {
		t.Errorf("no result table matching %s in\n%s", row, out)
	}
	last := regexp.MustCompile(`(?m)^raw udp: (t_typical )?` + `\d+\.\d\d (usec|MB/sec), rnic/raw = \d+\.\d\d .*\n\z`)
	if !last.MatchString(out) {
		t.Errorf("no raw udp line at the end of\n%s", out)
	}
	if !strings.Contains(out, " local address: LID 0000 QPN 0x") || !strings.Contains(out, "GID: 00:00:00:00:00:00:00:00:00:00:255:255:127:00:00:") {
		t.Errorf("no address lines in\n%s", out)
	}
}

// TestTwoProcessesOverPipe runs a server and a client as two processes
// would, through the TCP side channel, in one test process.
func TestTwoProcessesOverPipe(t *testing.T) {
	for _, mode := range []Mode{ModeBW, ModeLat} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := testCtx(t)
			l, err := net.Listen("tcp", "127.0.0.2:0")
			if err != nil {
				t.Fatal(err)
			}
			a, b := transport.NewPipe()
			var srvOut, cliOut bytes.Buffer
			type ret struct {
				res *Result
				err error
			}
			srv := make(chan ret, 1)
			go func() {
				// A server is told nothing about the test: the client sends it.
				res, err := Run(ctx, Config{Serve: true, Listener: l, Link: a, Out: &srvOut})
				srv <- ret{res, err}
			}()
			cfg := Config{Op: OpSend, Mode: mode, Size: 3000, Iters: 200, QPs: 2, MTU: 1024,
				Server: "127.0.0.2", Port: l.Addr().(*net.TCPAddr).Port, Link: b, Out: &cliOut}
			res, err := Run(ctx, cfg)
			s := <-srv
			if err != nil || s.err != nil {
				t.Fatalf("client %v\n%s\nserver %v\n%s", err, cliOut.String(), s.err, srvOut.String())
			}
			checkResult(t, cfg, res)
			checkTable(t, cfg, cliOut.String())
			checkTable(t, cfg, srvOut.String())
			// The server reports the client's figures, with the addresses
			// seen from its side.
			if s.res.Check != res.Check || len(s.res.Client) != 2 || s.res.Client[1] != res.Client[1] {
				t.Errorf("server's result %+v differs from the client's %+v", s.res, res)
			}
			if !strings.Contains(srvOut.String(), fmt.Sprintf(" local address: LID 0000 QPN %s", cHex(uint64(res.Server[0].QPN), 6))) {
				t.Errorf("server does not print its own QP as local:\n%s", srvOut.String())
			}
		})
	}
}

func TestJSON(t *testing.T) {
	a, b := transport.NewPipe()
	var out bytes.Buffer
	cfg := Config{Op: OpWrite, Mode: ModeBW, Size: 64, Iters: 100, Link: b, ServerLink: a, Out: &out, JSON: true}
	if _, err := Run(testCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	for _, k := range []string{"op", "mode", "size", "iters", "qps", "mtu", "bw", "check", "raw_udp"} {
		if _, ok := got[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, out.String())
		}
	}
	if strings.Count(out.String(), "\n") != 1 {
		t.Errorf("not one line: %s", out.String())
	}
}

func TestNoRaw(t *testing.T) {
	a, b := transport.NewPipe()
	var out bytes.Buffer
	res, err := Run(testCtx(t), Config{Op: OpRead, Mode: ModeLat, Iters: 50, Link: b, ServerLink: a, Out: &out, NoRaw: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Raw != nil || strings.Contains(out.String(), "raw udp") {
		t.Errorf("raw measured: %+v\n%s", res.Raw, out.String())
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Op: "flush"}, {Mode: "both"}, {Op: OpAtomic, Size: 16}, {Op: OpAtomic, AtomicType: "SWAP"},
		{MTU: 1500}, {Size: -1}, {QPs: MaxQPs + 1}, {Iters: -3}, {Port: 1 << 17},
		{Addr: loopback.Server}, // both NICs on one address
		{Server: "::1"},
	} {
		if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", cfg, err)
		}
	}
}

// TestCheckDetects proves the data check sees a corrupted byte and a
// wrong atomic word.
func TestCheckDetects(t *testing.T) {
	r := &resolved{Config: Config{Op: OpWrite, Mode: ModeBW, Size: 100}}
	q := &qpSide{dst: make([]byte, 128)[:100]}
	s := &side{cfg: r, qps: []*qpSide{q}}
	fillPattern(q.dst, clientSeed, 0)
	if c := s.checkTargets(clientSeed, 10); !c.OK() || c.Bytes != 100 {
		t.Fatalf("clean: %+v", c)
	}
	q.dst[42] ^= 0xff
	if c := s.checkTargets(clientSeed, 10); c.Mismatched != 1 {
		t.Fatalf("corrupted: %+v", c)
	}
	r.Op = OpAtomic
	q.dst = make([]byte, 8)
	q.dst[0] = 9 // little or big endian, 9 is not 10 either way
	if c := s.checkTargets(clientSeed, 10); c.OK() {
		t.Fatalf("atomic word 9 after 10 operations passed: %+v", c)
	}
}

// udpTestPort is the RoCEv2 port of this package's tests over UDP: one no
// other package's tests use, so packages tested in parallel do not meet on
// 127.0.0.2 and 127.0.0.3.
const udpTestPort = 24792

// TestOverUDP runs the default one-process mode: two NICs on 127.0.0.2
// and 127.0.0.3 over loopback UDP sockets.
func TestOverUDP(t *testing.T) {
	for _, cfg := range []Config{
		{Op: OpWrite, Mode: ModeBW, Size: 65536, Iters: 200},
		{Op: OpWrite, Mode: ModeLat, Size: 8, Iters: 200},
		{Op: OpSend, Mode: ModeBW, Size: 4096, Iters: 200, QPs: 2},
		{Op: OpAtomic, Mode: ModeLat, Iters: 200},
	} {
		t.Run(fmt.Sprintf("%s %s", cfg.Op, cfg.Mode), func(t *testing.T) {
			var out bytes.Buffer
			cfg.Out, cfg.RDMAPort = &out, udpTestPort
			res, err := Run(testCtx(t), cfg)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			checkResult(t, cfg, res)
			if testing.Verbose() {
				t.Log("\n" + out.String())
			}
		})
	}
}

// TestProgress makes a short run report its progress as a long one does.
func TestProgress(t *testing.T) {
	defer func(a time.Duration, c uint) { progressAfter, progressCheck = a, c }(progressAfter, progressCheck)
	progressAfter, progressCheck = 0, 1
	a, b := transport.NewPipe()
	var out, prog bytes.Buffer
	if _, err := Run(testCtx(t), Config{Op: OpWrite, Size: 64, Iters: 100, Link: b, ServerLink: a, Out: &out, Progress: &prog, NoRaw: true}); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^perf: write bw \d+/100 ops \(\d+%\) after \d+\.\ds`).MatchString(prog.String()) {
		t.Errorf("progress: %q", prog.String())
	}
}

// mute is a link that stops sending after a number of frames, like a NIC
// whose cable was pulled.
type mute struct {
	*transport.PipeEnd
	mu   sync.Mutex
	left int
}

func (m *mute) Send(f []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.left == 0 {
		return nil
	}
	m.left--
	return m.PipeEnd.Send(f)
}

// TestPeerGone: when the server's NIC falls silent mid-test, the client's
// operations fail with the RC retry error, and the run fails, promptly.
func TestPeerGone(t *testing.T) {
	a, b := transport.NewPipe()
	var out bytes.Buffer
	_, err := Run(testCtx(t), Config{Op: OpWrite, Size: 4096, MTU: 1024, Iters: 1000, TxDepth: 4, CQMod: 1,
		Link: b, ServerLink: &mute{PipeEnd: a, left: 20}, Out: &out})
	var ce *CompletionError
	if !errors.As(err, &ce) || ce.Status != verbs.WCRetryExcErr {
		t.Fatalf("%v, want a RETRY_EXC_ERR completion\n%s", err, out.String())
	}
	if out.Len() != 0 {
		t.Errorf("a failed run printed a report:\n%s", out.String())
	}
}
