// perftest's rdma_cm mode (-R) over iWARP, the only way perftest runs on
// siw: each connection is a TCP connection to the server's port (18515)
// carrying the MPA Request and Reply of RFC 5044 / RFC 6581 (revision 2,
// IRD and ORD as the only private data: 0 and 0 on the control connection
// and on a WRITE or SEND test's data QPs, 128 each on a READ test's, as
// testdata/captures/siw-*-bw-4096.pcap show), then the same SENDs as over
// RoCEv2 (cm.go), all through the iWARP NIC's connection manager
// (ibv.ConnManager). A disconnect is TCP's FIN, as siw closes an RTS QP.

package perf

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
)

// iwarpLink is the iWARP connection manager of one side.
type iwarpLink struct {
	r     *resolved
	cm    ibv.ConnManager
	l     ibv.CMListener // the server's
	conns []ibv.CMConn   // the QPs connected, control QP first
	ended chan int       // the index in conns of each connection that ended
	// client: this side connected (disconnect lingers in write_lat).
	client bool
}

// iwarpCMParam is a connection's parameters: its IRD and ORD as given,
// 0 included, as perftest's MPA frames carry them.
func iwarpCMParam(r *resolved, data bool) *ibv.ConnParam {
	n := uint8(min(cmIRDORD(r, data), int(iwarpIRDORD)))
	return &ibv.ConnParam{ResponderResources: n, InitiatorDepth: n, ExactIRDORD: true}
}

// add notes a connection, and its end on ended when it comes.
func (l *iwarpLink) add(c ibv.CMConn) {
	i := len(l.conns)
	l.conns = append(l.conns, c)
	go func() {
		<-c.Done()
		l.ended <- i
	}()
}

func (l *iwarpLink) connect(ctx context.Context, qp ibv.QP, data bool) error {
	p := iwarpCMParam(l.r, data)
	return retryConnect(ctx, l.r, func() error {
		cctx, cancel := context.WithTimeout(ctx, cmTimeout)
		defer cancel()
		c, err := l.cm.CMConnect(cctx, qp, l.r.server, uint16(l.r.Port), nil, p)
		if err != nil {
			if cctx.Err() != nil && ctx.Err() == nil {
				return fmt.Errorf("perf: iWARP connection setup to %v timed out", netip.AddrPortFrom(l.r.server, uint16(l.r.Port)))
			}
			return err
		}
		l.add(c)
		return nil
	}, iwarpRetryable)
}

// iwarpRetryable says whether a failed iWARP connect is worth another
// try: a refused TCP connection (no listener yet: the CM reports it as a
// rejection with IB's "invalid service ID", as the kernel's iWARP CM
// reports ECONNREFUSED as REJECTED) or a timeout is; the listener's own
// MPA reject is not.
func iwarpRetryable(err error) bool {
	var d ibv.RejectDetail
	if errors.As(err, &d) {
		return d.RejectReason() == ibv.RejectNoListener
	}
	return !errors.Is(err, ibv.ErrRejected)
}

func (l *iwarpLink) accept(ctx context.Context, qp ibv.QP, data bool) error {
	actx := ctx
	if len(l.conns) > 0 {
		// Not the first request, for which the client comes when it
		// comes.
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, cmTimeout)
		defer cancel()
	}
	req, err := l.l.Accept(actx)
	if err != nil {
		if ctx.Err() == nil {
			return errors.New("perf: iWARP connection setup timed out: the client's QP did not connect")
		}
		return err
	}
	c, err := req.Accept(ctx, qp, nil, iwarpCMParam(l.r, data))
	if err != nil {
		return fmt.Errorf("perf: iWARP accept: %w", err)
	}
	l.add(c)
	return nil
}

// close starts closing connection i (a FIN after what it queued); the
// end comes on ended.
func (l *iwarpLink) close(i int) {
	c := l.conns[i]
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), disconnectWait)
		defer cancel()
		c.Disconnect(ctx) // (nothing for one that has ended)
	}()
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
	left := len(l.conns)
	switch {
	case l.client && l.r.endHandShake() && left > 1:
		left = l.clientCloseData(timer, left)
	case !l.client && left > 1:
		left = l.serverCloseControl(timer, left)
	default:
		left = l.closeAll(timer, left)
	}
	if l.awaitEnded(timer, left) {
		l.conns = nil
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
	for i := 1; i < len(l.conns); i++ {
		l.close(i)
	}
wait:
	for left > 0 {
		select {
		case i := <-l.ended:
			left--
			if i == 0 {
				break wait
			}
		case <-timer.C:
			timer.Reset(disconnectWait)
			break wait
		}
	}
	l.close(0) // nothing if it has ended
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
	if !l.r.endHandShake() {
		l.close(0)
	}
	data := left - 1
waitData:
	for data > 0 {
		select {
		case i := <-l.ended:
			left--
			if i != 0 {
				data--
			}
		case <-timer.C:
			timer.Reset(disconnectWait)
			break waitData
		}
	}
	for i := range l.conns {
		l.close(i) // nothing for one that has ended
	}
	return left
}

// closeAll closes every connection; a client of a test without a final
// hand shake first waits, boundedly, for the server to close.
func (l *iwarpLink) closeAll(timer *time.Timer, left int) int {
	if l.client && !l.r.endHandShake() && left > 0 {
		select {
		case <-l.ended:
			left--
		case <-timer.C:
			timer.Reset(disconnectWait)
		}
	}
	for i := range l.conns {
		l.close(i)
	}
	return left
}

// awaitEnded waits, until the timer fires, for the left connections to
// end: true if they all did.
func (l *iwarpLink) awaitEnded(timer *time.Timer, left int) bool {
	for ; left > 0; left-- {
		select {
		case <-l.ended:
		case <-timer.C:
			return false
		}
	}
	return true
}

// iwarpCMSide opens an iWARP side for rdma_cm mode: its address (peer's
// family for a TAP NIC told none), and the MSS of its FPDUs.
func iwarpCMSide(r *resolved, h *host, spec sideSpec, peer netip.Addr) (*side, error) {
	local, mss := r.Addr, IWARPMSS
	if r.TAP != nil {
		var own []netip.Addr
		for _, p := range r.TAP.Prefixes {
			own = append(own, p.Addr().Unmap())
		}
		local = cmLocal(own, r.Addr, peer)
		mss = tapMSS(r.TAP.MTU, local)
	} else if !local.IsLoopback() {
		mss = embedded.IWARPDefaultMSS
	}
	return openIWARPSide(r, h, local, spec, mss)
}
