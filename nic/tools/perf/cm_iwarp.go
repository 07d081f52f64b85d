// perftest's rdma_cm mode (-R) over iWARP, the only way perftest runs on
// siw: each connection is a TCP connection to the server's port (18515)
// carrying the MPA Request and Reply of RFC 5044 / RFC 6581 (revision 2,
// IRD and ORD as the only private data: 0 and 0 on the control
// connection and on a WRITE or SEND test's data QPs, 128 each on a READ
// test's, as captures/siw-*-bw-4096.pcap show), then the same SENDs as
// over RoCEv2 (cm.go). A disconnect is TCP's FIN, as siw closes an RTS
// QP.

package perf

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/nic/ibv"
)

// iwarpLink is the iWARP connection manager of one side.
type iwarpLink struct {
	r    *resolved
	s    *side
	l    *iwarp.Listener
	reqs chan *iwarp.ConnRequest
	qpns []uint32 // the QPs connected, control QP first
	// client: this side connected (disconnect lingers in write_lat).
	client bool
}

func cmIRDORDIWARP(r *resolved, data bool) uint16 {
	return uint16(min(cmIRDORD(r, data), int(iwarpIRDORD)))
}

func (l *iwarpLink) connect(ctx context.Context, qp ibv.QP, data bool) error {
	n := cmIRDORDIWARP(l.r, data)
	to := netip.AddrPortFrom(l.r.server, uint16(l.r.Port))
	return retryConnect(ctx, l.r, func() error {
		done := make(chan iwarp.ConnectResult, 1)
		if err := l.s.iw.stack.Connect(qp.QPN(), to, nil, n, n, func(res iwarp.ConnectResult) { done <- res }); err != nil {
			return err
		}
		timer := time.NewTimer(cmTimeout)
		defer timer.Stop()
		select {
		case res := <-done:
			if res.Err != nil {
				return res.Err
			}
			l.qpns = append(l.qpns, qp.QPN())
			return nil
		case <-timer.C:
			l.s.iw.stack.Disconnect(qp.QPN())
			return fmt.Errorf("perf: iWARP connection setup to %v timed out", to)
		case <-ctx.Done():
			l.s.iw.stack.Disconnect(qp.QPN())
			return ctx.Err()
		}
	}, func(err error) bool { return !errors.Is(err, iwarp.ErrRejected) })
}

func (l *iwarpLink) accept(ctx context.Context, qp ibv.QP, data bool) error {
	timer := time.NewTimer(cmTimeout)
	defer timer.Stop()
	var req *iwarp.ConnRequest
	if len(l.qpns) == 0 {
		// The first request: the client comes when it comes.
		select {
		case req = <-l.reqs:
		case <-ctx.Done():
			return ctx.Err()
		}
	} else {
		select {
		case req = <-l.reqs:
		case <-timer.C:
			return errors.New("perf: iWARP connection setup timed out: the client's QP did not connect")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	n := cmIRDORDIWARP(l.r, data)
	if err := req.Accept(qp.QPN(), nil, n, n); err != nil {
		return fmt.Errorf("perf: iWARP accept: %w", err)
	}
	l.qpns = append(l.qpns, qp.QPN())
	return nil
}

// disconnect closes every connection after what it queued and waits,
// boundedly, for the peer to close too.
//
// A client of a test that ends with the report exchange closes the data
// connections and waits for the server to close the control connection.
//
// In a WRITE latency test no message ends the test (perftest's write_lat
// trades none): a client done first must not close while the server
// still works (siw's write_lat server then fails), so it waits,
// boundedly, for the server to close first.
//
// A server leaves the data connections to the client (see below).
// peerClosed: an iWARP SEND completes once TCP has it, so a server's
// last SEND is never flushed by the client's close; no need to know.
func (l *iwarpLink) peerClosed() bool { return false }

func (l *iwarpLink) disconnect() {
	timer := time.NewTimer(disconnectWait)
	defer timer.Stop()
	left := len(l.qpns)
	switch {
	case l.client && l.r.endHandShake() && left > 1:
		left = l.clientCloseData(timer, left)
	case !l.client && left > 1:
		left = l.serverCloseControl(timer, left)
	default:
		left = l.closeAll(timer, left)
	}
	if l.awaitEnded(timer, left) {
		l.qpns = nil
	}
}

// clientCloseData is a client's close when more than the control
// connection is up and the test ends with a hand shake. As Linux
// perftest's client does (siw-write-bw-4096.pcap): close the data
// connections, and let the server close the control connection, on which
// it may still be sending its last message. Closing the control connection
// first made siw's server fail that SEND ("Bad wc status", "Failed to
// close connection"). It returns how many connections have not ended.
func (l *iwarpLink) clientCloseData(timer *time.Timer, left int) int {
	ctrl := l.qpns[0]
	for _, q := range l.qpns[1:] {
		l.s.iw.stack.Disconnect(q)
	}
wait:
	for left > 0 {
		select {
		case q := <-l.s.iw.ended:
			left--
			if q == ctrl {
				break wait
			}
		case <-timer.C:
			timer.Reset(disconnectWait)
			break wait
		}
	}
	l.s.iw.stack.Disconnect(ctrl) // nothing if it has ended
	return left
}

// serverCloseControl is a server's close when more than the control
// connection is up. As Linux perftest's server does
// (siw-write-bw-4096.pcap, siw-read-bw-4096.pcap, siw-write-lat-64.pcap):
// the client closes the data connections; the server closes only the
// control connection, at once in a latency test and once the data
// connections have ended in a test that ends with the report exchange. A
// server closing a data connection first made siw's client fail ("Bad wc
// status 2", "Unable to write to socket/rdma_cm"), its last message
// possibly still unconsumed.
func (l *iwarpLink) serverCloseControl(timer *time.Timer, left int) int {
	ctrl := l.qpns[0]
	if !l.r.endHandShake() {
		l.s.iw.stack.Disconnect(ctrl)
	}
	data := left - 1
waitData:
	for data > 0 {
		select {
		case q := <-l.s.iw.ended:
			left--
			if q != ctrl {
				data--
			}
		case <-timer.C:
			timer.Reset(disconnectWait)
			break waitData
		}
	}
	for _, q := range l.qpns {
		l.s.iw.stack.Disconnect(q) // nothing for one that has ended
	}
	return left
}

// closeAll closes every connection; a client of a test without a final
// hand shake first waits, boundedly, for the server to close.
func (l *iwarpLink) closeAll(timer *time.Timer, left int) int {
	if l.client && !l.r.endHandShake() && left > 0 {
		select {
		case <-l.s.iw.ended:
			left--
		case <-timer.C:
			timer.Reset(disconnectWait)
		}
	}
	for _, q := range l.qpns {
		l.s.iw.stack.Disconnect(q)
	}
	return left
}

// awaitEnded waits, until the timer fires, for the left connections to
// end: true if they all did.
func (l *iwarpLink) awaitEnded(timer *time.Timer, left int) bool {
	for ; left > 0; left-- {
		select {
		case <-l.s.iw.ended:
		case <-timer.C:
			return false
		}
	}
	return true
}

// iwarpCMSide opens an iWARP side for rdma_cm mode: its address (peer's
// family for a TAP NIC told none), and the MSS of its FPDUs.
func iwarpCMSide(r *resolved, h *host, name string, seed byte, peer netip.Addr) (*side, error) {
	local, mss := r.Addr, IWARPMSS
	if r.TAP != nil {
		var own []netip.Addr
		for _, p := range r.TAP.Prefixes {
			own = append(own, p.Addr().Unmap())
		}
		local = cmLocal(own, r.Addr, peer)
		mss = tapMSS(r.TAP.MTU, local)
	} else if !local.IsLoopback() {
		mss = iwarp.DefaultMSS
	}
	s, err := openIWARPSide(r, local, name, seed, h.Streams(), mss)
	if err != nil {
		return nil, err
	}
	// The control QP's end comes on the same channel.
	s.iw.ended = make(chan uint32, r.QPs+1)
	return s, nil
}

// runCMClientIWARP opens the client's iWARP side and runs its steps.
func runCMClientIWARP(ctx context.Context, r *resolved) (*Result, error) {
	h, err := openIWARPHost(r, "rnic1")
	if err != nil {
		return nil, err
	}
	defer h.Close()
	s, err := iwarpCMSide(r, h, "rnic1", clientSeed, r.server)
	if err != nil {
		return nil, err
	}
	defer s.closeIWARP()
	ch, err := newCMChannel(ctx, s)
	if err != nil {
		return nil, err
	}
	defer ch.close()
	link := &iwarpLink{r: r, s: s, client: true}
	defer link.disconnect()
	return cmClient(ctx, r, s, ch, link)
}

// runCMServerIWARP listens on r.Port (any free port if 0; cmReady then
// learns it through r.Port) and serves.
func runCMServerIWARP(ctx context.Context, r *resolved) (*Result, error) {
	h, err := openIWARPHost(r, "rnic0")
	if err != nil {
		return nil, err
	}
	defer h.Close()
	s, err := iwarpCMSide(r, h, "rnic0", serverSeed, netip.IPv4Unspecified())
	if err != nil {
		return nil, err
	}
	defer s.closeIWARP()
	ch, err := newCMChannel(ctx, s)
	if err != nil {
		return nil, err
	}
	defer ch.close()
	link := &iwarpLink{r: r, s: s, reqs: make(chan *iwarp.ConnRequest, 4)}
	at := r.Addr
	if r.anyAddr || !at.IsValid() {
		at = netip.IPv4Unspecified()
	}
	link.l, err = s.iw.stack.Listen(netip.AddrPortFrom(at, uint16(r.Port)), func(req *iwarp.ConnRequest) {
		select {
		case link.reqs <- req:
		default:
			req.Reject(nil)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("perf: iWARP listen on port %d: %w", r.Port, err)
	}
	defer link.l.Close()
	defer link.disconnect()
	if r.cmReady != nil {
		r.cmListenPort = int(link.l.Addr().Port())
		close(r.cmReady)
	}
	return cmServer(ctx, r, s, ch, link)
}
