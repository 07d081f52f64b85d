package perf

import (
	"bytes"
	"errors"
	"net"
	"testing"

	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
)

// mwConfig is a small bw test of op through memory windows, both sides in
// one process over an in-process link.
func mwConfig(op Op, fault mwFault, out *bytes.Buffer) Config {
	a, b := transport.NewPipe()
	return Config{Op: op, Mode: ModeBW, Size: 4096, QPs: 2, Iters: 200, MTU: 1024, TxDepth: 16, CQMod: 5,
		MW: true, mwFault: fault, Link: b, ServerLink: a, Out: out, NoRaw: true}
}

// TestMWThroughWindows runs WRITE and READ bw through the server's
// windows: the keys handed out are the windows' (not the MR's) and the
// data arrives.
func TestMWThroughWindows(t *testing.T) {
	for _, op := range []Op{OpWrite, OpRead, OpAtomic} {
		t.Run(string(op), func(t *testing.T) {
			var out bytes.Buffer
			cfg := mwConfig(op, mwFaultNone, &out)
			if op == OpAtomic {
				cfg.Size = 0
			}
			res, err := Run(testCtx(t), cfg)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if !res.Check.OK() || res.BW == nil || res.BW.Ops != int64(cfg.Iters*cfg.QPs) {
				t.Fatalf("check %+v, figures %+v", res.Check, res.BW)
			}
			// Each QP's key names its own window: two QPs, two rkeys.
			if len(res.Server) != 2 || res.Server[0].RKey == res.Server[1].RKey {
				t.Fatalf("server keys %+v: want a window's rkey per QP", res.Server)
			}
		})
	}
}

// TestMWBrokenWindowFails breaks the server's windows (bound over the
// wrong region, or invalidated after the keys went out): the MR still
// covers everything, so only a peer that goes through the windows fails,
// with a remote access error.
func TestMWBrokenWindowFails(t *testing.T) {
	for _, c := range []struct {
		name  string
		op    Op
		fault mwFault
	}{
		{"write narrow", OpWrite, mwFaultNarrow},
		{"read narrow", OpRead, mwFaultNarrow},
		{"write invalidated", OpWrite, mwFaultInvalidate},
		{"read invalidated", OpRead, mwFaultInvalidate},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Run(testCtx(t), mwConfig(c.op, c.fault, &out))
			var ce *CompletionError
			if !errors.As(err, &ce) || ce.Status != verbs.WCRemAccessErr {
				t.Fatalf("run through broken windows: %v, want a completion with REM_ACCESS_ERR\n%s", err, out.String())
			}
		})
	}
}

// TestMWRefused: --mw where it cannot work is a configuration error.
func TestMWRefused(t *testing.T) {
	for _, cfg := range []Config{
		{Op: OpSend, MW: true},
		{Op: OpWrite, MW: true, IWARP: true},
		{Op: OpWrite, MW: true, RDMACM: true},
	} {
		if err := cfg.checkMW(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: checkMW %v, want ErrConfig", cfg, err)
		}
	}
}

// TestMWThroughRnicd runs write_bw through windows on rnicd's NICs (the
// real rnicd client, NAME@SOCKET), server and client as two processes
// would: the client asks for --mw, the server learns it from the hello.
// Each side's keys are the windows', so the two key sets differ from the
// MR's (one rkey per QP, not one for all).
func TestMWThroughRnicd(t *testing.T) {
	noSettle(t)
	d := rnicdtest.Start(t, rnicdtest.Options{NICs: 2, MTU: 9000})
	ctx := testCtx(t)
	l, err := net.Listen("tcp", d.NICs[0].Addr.String()+":0")
	if err != nil {
		t.Fatal(err)
	}
	var srvOut, cliOut bytes.Buffer
	type ret struct {
		res *Result
		err error
	}
	srv := make(chan ret, 1)
	go func() {
		res, err := Run(ctx, Config{Serve: true, IBDev: d.Spec(0).String(), Listener: l, NoRaw: true, Out: &srvOut})
		srv <- ret{res, err}
	}()
	res, err := Run(ctx, Config{Op: OpWrite, Mode: ModeBW, Size: 4096, QPs: 2, Iters: 200, MW: true, NoRaw: true,
		IBDev: d.Spec(1).String(), Server: d.NICs[0].Addr.String(), Port: l.Addr().(*net.TCPAddr).Port, Out: &cliOut})
	s := <-srv
	if err != nil || s.err != nil {
		t.Fatalf("client %v\n%s\nserver %v\n%s", err, cliOut.String(), s.err, srvOut.String())
	}
	if !res.Check.OK() || res.Check.Bytes == 0 {
		t.Errorf("data check %+v", res.Check)
	}
	for _, keys := range [][]Key{res.Client, res.Server} {
		if len(keys) != 2 || keys[0].RKey == keys[1].RKey {
			t.Errorf("keys %+v: want a window's rkey per QP", keys)
		}
	}
}
