// Running a test: both sides in one process (the server on a goroutine),
// or one side of two; the connection between them; the result. The roles
// are the same for both transports; the steps of each side are in
// client.go and server.go (perftest's exchange, RoCEv2), or
// iwarp_client.go and iwarp_server.go (rnic's, iWARP).

package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/rnic/rnic/cmd/internal/progkit"
	"github.com/rnic/rnic/nic/ibv"
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
	// RawSkipped says why there is no raw figure when it was not even
	// tried: "TAP mode" (the raw transports are the kernel's, which a
	// TAP-mode NIC does not use).
	RawSkipped string `json:"raw_skipped,omitempty"`
	// GIDIndex is the client's source GID index.
	GIDIndex int `json:"gid_index"`
	// IWARP: the run was over iWARP on kernel TCP; Raw (and RawError)
	// then hold the raw TCP measurement, and MTU is the engine's MSS.
	IWARP bool `json:"iwarp,omitempty"`
	// UD: the QPs were UD (a SEND test, perftest's -c UD).
	UD bool `json:"ud,omitempty"`
	// RDMACM: the QPs were connected with rdma_cm (perftest's -R), which
	// carried the side channel too.
	RDMACM bool `json:"rdma_cm,omitempty"`
	// ConnectSeconds is how long the client took to trade the QPs' keys
	// with the server and connect them all (both sides' RTR and RTS).
	ConnectSeconds float64 `json:"connect_seconds"`
	// Client and Server are the two sides' key messages, QP by QP.
	Client []Key `json:"client_keys"`
	Server []Key `json:"server_keys"`
}

// Run runs the test cfg describes: both sides in this process (the
// default), or the server or the client of a two-process test. It prints
// the report on cfg.Out (the server of a two-process test prints the
// client's figures, as perftest's bw servers do) and returns the result.
// The error wraps ErrDataMismatch when data did not arrive intact; the
// raw UDP (iWARP: TCP) measurement failing is not an error
// (Result.RawError).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.IWARP {
		if err := cfg.checkIWARP(); err != nil {
			return nil, err
		}
	}
	r, err := cfg.resolve(ctx)
	if err != nil {
		return nil, err
	}
	if r.spec.Backend != ibv.BackendLocal {
		dev, err := openDevice(ctx, r)
		if err != nil {
			return nil, err
		}
		defer dev.Close()
	}
	var res *Result
	switch {
	case r.RDMACM:
		res, err = runCM(ctx, r)
	case r.role == roleBoth:
		res, err = runBoth(ctx, r)
	case r.role == roleServer:
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
	sr := *r
	sr.role = roleServer
	sr.Addr, sr.Link, sr.TAP, sr.ServerTAP, sr.anyAddr = r.server, r.ServerLink, r.ServerTAP, nil, false
	sr.Port, sr.IBDev = 0, ""
	sr.IWARPPort = -1 // the iWARP CM's: any free port
	sr.Pcap, sr.Out, sr.Progress = nil, io.Discard, io.Discard
	srv, err := startServer(&sr)
	if err != nil {
		return nil, err
	}
	cr := *r
	cr.Port = srv.l.Addr().(*net.TCPAddr).Port

	// Each side stops the other when it fails on its own; a side that
	// fails because the other told it so (ErrPeer) has nothing to add.
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	srvErr := make(chan error, 1)
	go func() {
		_, err := srv.serve(sctx, &sr)
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
	srv, err := startServer(r)
	if err != nil {
		return nil, err
	}
	if !r.JSON {
		io.WriteString(r.Out, waitBanner)
	}
	return srv.serve(ctx, r)
}

// server is a server's NIC and side-channel listener: the NIC comes
// first, since in the TAP mode the listener is on the NIC's own TCP.
type server struct {
	h *host
	l net.Listener
}

// startServer opens the server's NIC and listens on its address (every
// address of a TAP NIC unless told one).
func startServer(r *resolved) (*server, error) {
	h, err := openHost(r, hostSpec{name: r.nicName("rnic0"), tap: r.TAP, addr: r.Addr, link: r.Link, pcap: r.Pcap, trace: r.Trace})
	if err != nil {
		return nil, err
	}
	return listenServer(r, h)
}

// listenServer listens for the side channel through h (closed again on
// failure).
func listenServer(r *resolved, h *host) (*server, error) {
	l := r.Listener
	if l == nil {
		var err error
		if l, err = progkit.Listen(h, r.Addr, r.anyAddr, r.Port); err != nil {
			h.Close()
			return nil, fmt.Errorf("perf: listen on port %d: %w", r.Port, err)
		}
	}
	return &server{h: h, l: l}, nil
}

// accept waits for one client and stops listening.
func (srv *server) accept(ctx context.Context) (net.Conn, error) {
	conn, err := progkit.AcceptOne(ctx, srv.l)
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("perf: accept: %w", err)
	}
	return conn, err
}

// serve accepts one client, serves its test and closes the NIC.
func (srv *server) serve(ctx context.Context, r *resolved) (*Result, error) {
	defer srv.h.Close()
	conn, err := srv.accept(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	var res *Result
	if r.IWARP {
		res, err = serveIWARP(ctx, r, srv.h, conn)
	} else {
		dev := srv.h.Device()
		res, err = serve(ctx, r, dev, gidAddr(dev, conn, r.Addr), newChannel(conn))
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err == nil {
		closeSideChannel(conn)
	}
	return res, err
}

// localAddr is the address conn runs on here, or def: the address this
// side's QPs send from (in the TAP mode the NIC's address of the peer's
// family).
func localAddr(conn net.Conn, def netip.Addr) netip.Addr {
	if a, ok := conn.LocalAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap()
		}
	}
	return def
}

// gidAddr is the address conn runs on here if dev has a GID of it, else
// def: the address this side's QPs send from. (A device of another
// backend may run its side channel on an address of the host it has no
// GID of.)
func gidAddr(dev ibv.Device, conn net.Conn, def netip.Addr) netip.Addr {
	a := localAddr(conn, def)
	if _, err := dev.GIDIndex(a); err != nil {
		return def
	}
	return a
}

// dial connects to the server's side channel, from the client's NIC
// address, retrying a refused connection for a moment and giving up on
// one nothing answers (ibv.DialWait), saying so on Progress meanwhile.
func dial(ctx context.Context, r *resolved, h *host) (net.Conn, error) {
	target := netip.AddrPortFrom(r.server, uint16(r.Port))
	return kit.Dial(ctx, h.net, r.Addr, target, r.DialRetry, r.Progress, "connect to")
}

// runClient runs the client's side against the server at r.server.
func runClient(ctx context.Context, r *resolved) (*Result, error) {
	h, err := openHost(r, hostSpec{name: r.nicName("rnic1"), tap: r.TAP, addr: r.Addr, link: r.Link, pcap: r.Pcap, trace: r.Trace})
	if err != nil {
		return nil, err
	}
	defer h.Close()
	conn, err := dial(ctx, r, h)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	s, err := openClientSide(r, h, conn)
	if err != nil {
		return nil, err
	}
	defer s.close()
	steps := client
	if r.IWARP {
		steps = iwarpClient
	}
	res, err := steps(ctx, r, s, newChannel(conn))
	if err != nil && ctx.Err() != nil {
		return res, ctx.Err()
	}
	if err == nil {
		closeSideChannel(conn)
	}
	return res, err
}

// openClientSide opens the client's side: on h's device (RoCEv2), or on
// an iWARP NIC of its own on h's streams, at the address the side channel
// conn runs on and with FPDUs sized for its path.
func openClientSide(r *resolved, h *host, conn net.Conn) (*side, error) {
	spec := sideSpec{name: "rnic1", seed: clientSeed}
	if r.IWARP {
		return openIWARPSide(r, h, localAddr(conn, r.Addr), spec, iwarpMSS(r, conn))
	}
	return openSide(r, h.Device(), gidAddr(h.Device(), conn, r.Addr), spec)
}

// newResult is a result for r with no figures yet.
func newResult(r *resolved) *Result {
	c := &r.Config
	return &Result{Op: c.Op, Mode: c.Mode, AtomicType: c.AtomicType, Size: c.Size, Iters: c.Iters,
		QPs: c.QPs, MTU: c.MTU, TxDepth: c.TxDepth, CQMod: c.CQMod, UD: c.UD, RDMACM: c.RDMACM}
}
