// Connecting QP pairs through the iWARP NIC's connection manager
// (ibv.ConnManager), as rdma_cm tools do: the server listens, the client
// connects each of its QPs (TCP, then the MPA Request, RFC 5044 §7.1 with
// RFC 6581's IRD/ORD and RTR), and the server accepts each request on its
// QP of the same index (the MPA Reply). The index travels as the
// request's private data: 4 bytes, big-endian.

package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
)

// cmTimeout bounds the connection of all QPs (siw's MPA timeout is 10 s
// too).
const cmTimeout = 10 * time.Second

// iwarpIRDORD is the IRD and ORD each QP offers: as many outstanding READs
// and atomics as the RoCE test allows.
const iwarpIRDORD = uint8(min(maxOutReads, embedded.IWARPMaxIRDORD))

// iwarpParam is the connection parameters of every QP.
var iwarpParam = &ibv.ConnParam{ResponderResources: iwarpIRDORD, InitiatorDepth: iwarpIRDORD}

// qpIndexOf is the QP index a connection request's private data names,
// for a side with n QPs.
func qpIndexOf(pd []byte, n int) (int, error) {
	if len(pd) != 4 {
		return 0, fmt.Errorf("perf: connection request with %d bytes of private data, not a QP index", len(pd))
	}
	i := binary.BigEndian.Uint32(pd)
	if i >= uint32(n) {
		return 0, fmt.Errorf("perf: connection request for QP %d of %d", i, n)
	}
	return int(i), nil
}

// qpListener is a listener for the peer's QPs; Close stops it.
type qpListener struct {
	l      ibv.CMListener
	cancel context.CancelFunc
}

func (l *qpListener) Port() uint16 { return l.l.Port() }

func (l *qpListener) Close() {
	l.cancel()
	l.l.Close()
}

// listenIWARP listens on port (of the NIC's address) for the peer's QPs
// and accepts each QP index once; a request it cannot take is rejected.
// Every answer's outcome goes to the channel returned, which holds one
// per QP (waitAccepted reads them).
func (s *side) listenIWARP(port uint16) (*qpListener, <-chan error, error) {
	cm, err := connManager(s.cfg, s.dev)
	if err != nil {
		return nil, nil, err
	}
	cl, err := cm.CMListen(port)
	if err != nil {
		return nil, nil, fmt.Errorf("perf: iWARP listen on port %d: %w", port, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	accepted := make(chan error, len(s.qps))
	go s.acceptQPs(ctx, cl, accepted)
	return &qpListener{l: cl, cancel: cancel}, accepted, nil
}

// acceptQPs answers the requests until ctx ends. An outcome that finds
// the channel full comes after one per QP, which ended the wait already.
func (s *side) acceptQPs(ctx context.Context, l ibv.CMListener, accepted chan<- error) {
	tell := func(err error) {
		select {
		case accepted <- err:
		default:
		}
	}
	taken := make([]bool, len(s.qps))
	for {
		req, err := l.Accept(ctx)
		if err != nil {
			return
		}
		i, err := qpIndexOf(req.PrivateData(), len(s.qps))
		if err == nil && taken[i] {
			err = fmt.Errorf("perf: a second connection request for QP %d", i)
		}
		if err != nil {
			req.Reject(nil)
			tell(err)
			continue
		}
		taken[i] = true
		go func() {
			c, err := req.Accept(ctx, s.qps[i].qp, nil, iwarpParam)
			if err != nil {
				tell(fmt.Errorf("perf: accept QP %d: %w", i, err))
				return
			}
			s.addConn(c)
			tell(nil)
		}()
	}
}

// waitAccepted waits until n connections were accepted, or one failed.
func waitAccepted(ctx context.Context, accepted <-chan error, n int) error {
	timer := time.NewTimer(cmTimeout)
	defer timer.Stop()
	for ; n > 0; n-- {
		select {
		case err := <-accepted:
			if err != nil {
				return err
			}
		case <-timer.C:
			return errors.New("perf: iWARP connection setup timed out: the client's QPs did not all connect")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// failedAccept is an outcome already in accepted that is a failure, if
// any: the cause when the client reports that connecting failed.
func failedAccept(accepted <-chan error) error {
	for {
		select {
		case err := <-accepted:
			if err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// connectQPs connects QP i to the listener at to with i as private data,
// for every QP at once, and waits until all are established (in RTS).
func (s *side) connectQPs(ctx context.Context, to netip.AddrPort) error {
	cm, err := connManager(s.cfg, s.dev)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, cmTimeout)
	defer cancel()
	errs := make(chan error, len(s.qps))
	for i, q := range s.qps {
		pd := binary.BigEndian.AppendUint32(nil, uint32(i))
		go func() {
			c, err := cm.CMConnect(cctx, q.qp, to.Addr(), to.Port(), pd, iwarpParam)
			if err == nil {
				s.addConn(c)
			}
			errs <- qpConnectError(ctx, cctx, i, to, err)
		}()
	}
	for range s.qps {
		if err := <-errs; err != nil {
			cancel() // the others give up
			return err
		}
	}
	return nil
}

// qpConnectError says why QP i did not connect to to: ctx ended, the
// setup took longer than cmTimeout (cctx), or the CM's error.
func qpConnectError(ctx, cctx context.Context, i int, to netip.AddrPort, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case cctx.Err() != nil:
		return fmt.Errorf("perf: iWARP connection setup to %v timed out", to)
	}
	return fmt.Errorf("perf: connect QP %d to %v: %w", i, to, err)
}
