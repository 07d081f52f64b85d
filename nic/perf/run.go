// Running a test: both sides in one process (the server on a goroutine),
// or one side of two; the connection between them; the result. The steps
// of each side are in client.go and server.go.

package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// Seeds of the two sides' data patterns.
const (
	serverSeed byte = 0xA5
	clientSeed byte = 0x3C
)

// ErrDataMismatch is returned when the data check found bytes that
// differ from what was sent.
var ErrDataMismatch = errors.New("perf: data check failed")

// Result is a run's outcome, as printed and as --json shows it.
type Result struct {
	Op         Op         `json:"op"`
	Mode       Mode       `json:"mode"`
	AtomicType AtomicType `json:"atomic_type,omitempty"`
	Size       int        `json:"size"`
	Iters      int        `json:"iters"`
	QPs        int        `json:"qps"`
	MTU        int        `json:"mtu"`
	TxDepth    int        `json:"tx_depth"`
	CQMod      int        `json:"cq_mod"`
	BW         *BWStats   `json:"bw,omitempty"`
	Lat        *LatStats  `json:"lat,omitempty"`
	Check      Check      `json:"check"`
	Raw        *RawStats  `json:"raw_udp,omitempty"`
	RawError   string     `json:"raw_udp_error,omitempty"`
	// IWARP: the run was over iWARP on kernel TCP; Raw (and RawError)
	// then hold the raw TCP measurement, and MTU is the engine's MSS.
	IWARP bool `json:"iwarp,omitempty"`
	// Client and Server are the two sides' key messages, QP by QP.
	Client []Key `json:"client_keys"`
	Server []Key `json:"server_keys"`
}

// Run runs the test cfg describes: both sides in this process (the
// default), or the server or the client of a two-process test. It prints
// the report on cfg.Out (the server of a two-process test prints the
// client's figures, as perftest's bw servers do) and returns the result.
// The error wraps ErrDataMismatch when data did not arrive intact; the
// raw UDP measurement failing is not an error (Result.RawError).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.IWARP {
		return runIWARP(ctx, cfg)
	}
	r, err := cfg.resolve(ctx)
	if err != nil {
		return nil, err
	}
	var res *Result
	switch r.role {
	case roleBoth:
		res, err = runBoth(ctx, r)
	case roleServer:
		res, err = runServer(ctx, r)
	default:
		res, err = runClient(ctx, r)
	}
	if err != nil {
		return res, err
	}
	if err := writeReport(r.Out, r.JSON, res, r.role == roleServer); err != nil {
		return res, err
	}
	if !res.Check.OK() {
		return res, fmt.Errorf("%w: %d of %d bytes differ", ErrDataMismatch, res.Check.Mismatched, res.Check.Bytes)
	}
	return res, nil
}

// runBoth runs the server on a goroutine and the client here, with a side
// channel on an ephemeral port of the server's address.
func runBoth(ctx context.Context, r *resolved) (*Result, error) {
	l := r.Listener
	if l == nil {
		var err error
		if l, err = net.Listen("tcp", netip.AddrPortFrom(r.server, 0).String()); err != nil {
			return nil, fmt.Errorf("perf: side channel: %w", err)
		}
	}
	sr := *r
	sr.role = roleServer
	sr.Addr, sr.Link, sr.Listener = r.server, r.ServerLink, l
	sr.Pcap, sr.Out, sr.Progress = nil, io.Discard, io.Discard
	cr := *r
	cr.Port = l.Addr().(*net.TCPAddr).Port

	// Each side stops the other when it fails on its own; a side that
	// fails because the other told it so (ErrPeer) has nothing to add.
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	srvErr := make(chan error, 1)
	go func() {
		_, err := runServer(sctx, &sr)
		if err != nil && !errors.Is(err, ErrPeer) {
			ccancel()
		}
		srvErr <- err
	}()
	res, err := runClient(cctx, &cr)
	if err != nil {
		scancel()
	}
	serr := <-srvErr
	if serr != nil && !errors.Is(serr, context.Canceled) && !errors.Is(serr, ErrPeer) &&
		(err == nil || errors.Is(err, context.Canceled)) {
		// The server failed first (the client only saw it go): its error
		// is the cause.
		err = fmt.Errorf("perf: server: %w", serr)
	}
	return res, err
}

// waitBanner is what perftest's server prints while it waits.
const waitBanner = "\n************************************\n* Waiting for client to connect... *\n************************************\n"

// runServer accepts one client and serves its test.
func runServer(ctx context.Context, r *resolved) (*Result, error) {
	l := r.Listener
	if l == nil {
		var err error
		l, err = net.Listen("tcp", netip.AddrPortFrom(r.Addr, uint16(r.Port)).String())
		if err != nil {
			return nil, fmt.Errorf("perf: listen on port %d: %w", r.Port, err)
		}
	}
	if !r.JSON {
		io.WriteString(r.Out, waitBanner)
	}
	stop := context.AfterFunc(ctx, func() { l.Close() })
	conn, err := l.Accept()
	stop()
	l.Close()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("perf: accept: %w", err)
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	res, err := serve(ctx, r, newChannel(conn))
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return res, err
}

// dial connects to the server's side channel, from the client's NIC
// address, retrying a refused connection for a moment.
func dial(ctx context.Context, r *resolved) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: r.Addr.AsSlice()}}
	target := net.JoinHostPort(r.server.String(), strconv.Itoa(r.Port))
	deadline := time.Now().Add(r.DialRetry)
	for {
		conn, err := d.DialContext(ctx, "tcp", target)
		if err == nil {
			return conn, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || r.DialRetry < 0 || time.Now().After(deadline) {
			return nil, fmt.Errorf("perf: connect to %s: %w", target, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// runClient runs the client's side against the server at r.server.
func runClient(ctx context.Context, r *resolved) (*Result, error) {
	s, err := openSide(r, r.Addr, sideSpec{name: "rnic1", link: r.Link, pcap: r.Pcap, trace: r.Trace, seed: clientSeed})
	if err != nil {
		return nil, err
	}
	defer s.close()
	conn, err := dial(ctx, r)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	res, err := client(ctx, r, s, newChannel(conn))
	if err != nil && ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, err
}

// newResult is a result for r with no figures yet.
func newResult(r *resolved) *Result {
	c := &r.Config
	return &Result{Op: c.Op, Mode: c.Mode, AtomicType: c.AtomicType, Size: c.Size, Iters: c.Iters,
		QPs: c.QPs, MTU: c.MTU, TxDepth: c.TxDepth, CQMod: c.CQMod}
}
