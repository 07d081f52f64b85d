package pingpong

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"testing"
	"time"

	"github.com/rnic/rnic/cmd/internal/loopback"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

// pair runs a server and a client in this process: their side channel is a
// TCP listener on an ephemeral port of 127.0.0.2, their NICs talk over the
// given links (UDP sockets if nil). It returns both outputs and results.
type pair struct {
	server, client        Config
	serverLink, clientLnk transport.Endpoint
}

type sideResult struct {
	out bytes.Buffer
	res *Result
	err error
}

func (p pair) run(t *testing.T) (srv, cli *sideResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, cli = &sideResult{}, &sideResult{}
	s := p.server
	s.Addr, s.Listener, s.Link, s.Out = loopback.Server, l, p.serverLink, &srv.out
	c := p.client
	c.Server, c.Port, c.Link, c.Out = "127.0.0.2", l.Addr().(*net.TCPAddr).Port, p.clientLnk, &cli.out
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.res, srv.err = Run(ctx, s)
	}()
	cli.res, cli.err = Run(ctx, c)
	<-done
	return srv, cli
}

// linesRE matches the four lines rc_pingpong prints.
func linesRE(localIP, remoteIP string, size, iters int) *regexp.Regexp {
	return linesREOf(false, localIP, remoteIP, size, iters)
}

// linesREOf matches rc_pingpong's lines, or with ud ud_pingpong's (whose
// local address line has "PSN 0x...: GID").
func linesREOf(ud bool, localIP, remoteIP string, size, iters int) *regexp.Regexp {
	addr := `LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID `
	local := addr
	if ud {
		local = `LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}: GID `
	}
	return regexp.MustCompile(`^  local address:  ` + local + regexp.QuoteMeta(localIP) + "\n" +
		`  remote address: ` + addr + regexp.QuoteMeta(remoteIP) + "\n" +
		fmt.Sprintf(`%d bytes in \d+\.\d\d seconds = \d+\.\d\d Mbit/sec`, 2*size*iters) + "\n" +
		fmt.Sprintf(`%d iters in \d+\.\d\d seconds = \d+\.\d\d usec/iter`, iters) + "\n$")
}

func checkPair(t *testing.T, srv, cli *sideResult, size, iters int) {
	t.Helper()
	checkPairOf(t, false, srv, cli, size, iters)
}

func checkPairOf(t *testing.T, ud bool, srv, cli *sideResult, size, iters int) {
	t.Helper()
	if srv.err != nil || cli.err != nil {
		t.Fatalf("server: %v\n%s\nclient: %v\n%s", srv.err, srv.out.String(), cli.err, cli.out.String())
	}
	if re := linesREOf(ud, "::ffff:127.0.0.2", "::ffff:127.0.0.3", size, iters); !re.MatchString(srv.out.String()) {
		t.Errorf("server output does not match %s:\n%s", re, srv.out.String())
	}
	if re := linesREOf(ud, "::ffff:127.0.0.3", "::ffff:127.0.0.2", size, iters); !re.MatchString(cli.out.String()) {
		t.Errorf("client output does not match %s:\n%s", re, cli.out.String())
	}
	if srv.res.Local != cli.res.Remote || cli.res.Local != srv.res.Remote {
		t.Errorf("addresses differ: server %+v / %+v, client %+v / %+v", srv.res.Local, srv.res.Remote, cli.res.Local, cli.res.Remote)
	}
	if srv.res.Bytes() != int64(2*size*iters) || srv.res.Elapsed <= 0 {
		t.Errorf("server result %+v", srv.res)
	}
	if testing.Verbose() {
		t.Logf("server:\n%sclient:\n%s", srv.out.String(), cli.out.String())
	}
}

func TestRunOverPipe(t *testing.T) {
	for _, c := range []struct {
		name        string
		size, iters int
		events, chk bool
		mtu, rx     int
	}{
		{name: "4096", size: 4096, iters: 100},
		{name: "1 byte", size: 1, iters: 100},
		{name: "64 bytes, rx depth 2", size: 64, iters: 100, rx: 2},
		{name: "events", size: 4096, iters: 100, events: true},
		{name: "chk 10000 bytes at MTU 256", size: 10000, iters: 50, chk: true, mtu: 256},
		{name: "chk events MTU 4096", size: 65536, iters: 20, chk: true, events: true, mtu: 4096},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := transport.NewPipe()
			cfg := Config{Size: c.size, Iters: c.iters, Events: c.events, Check: c.chk, MTU: c.mtu, RxDepth: c.rx}
			srv, cli := pair{server: cfg, client: cfg, serverLink: a, clientLnk: b}.run(t)
			checkPair(t, srv, cli, c.size, c.iters)
			if c.events && (srv.res.CQEvents == 0 || cli.res.CQEvents == 0) {
				t.Errorf("events mode waited for %d and %d events", srv.res.CQEvents, cli.res.CQEvents)
			}
		})
	}
}

// TestRunNoGID: without -g the messages carry no GID (printed "::") and
// each side reaches the other by its side channel address.
func TestRunNoGID(t *testing.T) {
	a, b := transport.NewPipe()
	cfg := Config{Size: 64, Iters: 20, GIDIndex: -1}
	srv, cli := pair{server: cfg, client: cfg, serverLink: a, clientLnk: b}.run(t)
	if srv.err != nil || cli.err != nil {
		t.Fatalf("server %v, client %v", srv.err, cli.err)
	}
	if re := linesRE("::", "::", 64, 20); !re.MatchString(cli.out.String()) {
		t.Errorf("client output:\n%s", cli.out.String())
	}
}

// TestRunCompletionError: a client that sends more than the server's
// receive buffer holds fails both sides as rc_pingpong fails: the server's
// receive completes with a length error, and its NAK fails the client's
// SEND.
func TestRunCompletionError(t *testing.T) {
	a, b := transport.NewPipe()
	srv, cli := pair{server: Config{Size: 64, Iters: 5}, client: Config{Size: 128, Iters: 5},
		serverLink: a, clientLnk: b}.run(t)
	for _, c := range []struct {
		side   string
		err    error
		status verbs.WCStatus
		want   string
	}{
		{"server", srv.err, verbs.WCLocLenErr, "Failed status local length error (1) for wr_id 1"},
		{"client", cli.err, verbs.WCRemInvReqErr, "Failed status remote invalid request error (9) for wr_id 2"},
	} {
		var ce *CompletionError
		if !errors.As(c.err, &ce) {
			t.Errorf("%s: %v, want a completion error", c.side, c.err)
			continue
		}
		if ce.Error() != c.want || ce.Status != c.status {
			t.Errorf("%s: %q, want %q", c.side, ce.Error(), c.want)
		}
	}
}

func TestRunChkDetectsCorruption(t *testing.T) {
	buf := make([]byte, 3*PageSize)
	fillPattern(buf)
	bad := map[int]bool{}
	checkPattern(buf, bad)
	if len(bad) != 0 {
		t.Fatalf("clean buffer: bad pages %v", bad)
	}
	buf[PageSize+7] ^= 1
	buf[2*PageSize] ^= 1
	checkPattern(buf, bad)
	if len(bad) != 2 || !bad[1] || !bad[2] {
		t.Fatalf("bad pages %v, want 1 and 2", bad)
	}
}

// What a real ibv_rc_pingpong --chk peer sends passes (each page 0, then
// its 0x7b fill), and what it checks holds for rnic's messages (every
// page's first byte 0); a page that is neither fill whole fails.
func TestRunChkInteropsWithRCPingpong(t *testing.T) {
	buf := make([]byte, 3*PageSize+100)
	for i := range buf {
		buf[i] = rcPingpongFill
		if i%PageSize == 0 {
			buf[i] = 0
		}
	}
	bad := map[int]bool{}
	checkPattern(buf, bad)
	if len(bad) != 0 {
		t.Fatalf("rc_pingpong's message: bad pages %v", bad)
	}
	buf[PageSize] = 1        // what rc_pingpong's own check flags
	buf[2*PageSize+9] = 0x7a // a fill broken
	copy(buf[3*PageSize:], make([]byte, 100))
	checkPattern(buf, bad)
	if len(bad) != 3 || !bad[1] || !bad[2] || !bad[3] {
		t.Fatalf("bad pages %v, want 1, 2 and 3", bad)
	}
	fillPattern(buf)
	for i := 0; i < len(buf); i += PageSize {
		if buf[i] != 0 {
			t.Fatalf("rnic's message has %#x at page start %d: rc_pingpong --chk flags it", buf[i], i)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{MTU: 1500}, {Size: -1}, {Iters: -1}, {RxDepth: -2}, {IBPort: 2}, {SL: 16}, {Port: 70000},
		{Server: "::1"},
	} {
		if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", cfg, err)
		}
	}
}

func TestDefaultAddr(t *testing.T) {
	for _, c := range []struct{ server, want string }{
		{"", "127.0.0.2"}, {"127.0.0.2", "127.0.0.3"}, {"127.0.0.3", "127.0.0.2"}, {"127.0.0.1", "127.0.0.3"},
	} {
		var s netip.Addr
		if c.server != "" {
			s = netip.MustParseAddr(c.server)
		}
		got, err := defaultAddr(s)
		if err != nil || got.String() != c.want {
			t.Errorf("server %q: %v %v, want %s", c.server, got, err, c.want)
		}
	}
}

// udpTestPort is the RoCEv2 port of this package's tests over UDP: one no
// other package's tests use, so packages tested in parallel do not meet on
// 127.0.0.2 and 127.0.0.3.
const udpTestPort = 24791

// TestRunOverUDP runs both sides in the embedded mode: kernel UDP sockets
// on 127.0.0.2 and 127.0.0.3.
func TestRunOverUDP(t *testing.T) {
	for _, c := range []struct {
		name        string
		size, iters int
		events, chk bool
	}{
		{name: "4096", size: 4096, iters: 100},
		{name: "small", size: 8, iters: 100},
		{name: "events chk", size: 20000, iters: 50, events: true, chk: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Size: c.size, Iters: c.iters, Events: c.events, Check: c.chk, RDMAPort: udpTestPort}
			srv, cli := pair{server: cfg, client: cfg}.run(t)
			checkPair(t, srv, cli, c.size, c.iters)
		})
	}
}
