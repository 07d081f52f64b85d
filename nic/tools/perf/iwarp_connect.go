// Connecting QP pairs through the iWARP connection manager, as rdma_cm
// tools do: the server listens, the client connects each of its QPs (TCP,
// then the MPA Request, RFC 5044 §7.1 with RFC 6581's IRD/ORD and RTR),
// and the server accepts each request on its QP of the same index (the MPA
// Reply). The index travels as the request's private data: 4 bytes,
// big-endian.

package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/iwarp"
)

// cmTimeout bounds the connection of all QPs (siw's MPA timeout is 10 s
// too).
const cmTimeout = 10 * time.Second

// iwarpIRDORD is the IRD and ORD each QP offers: as many outstanding READs
// and atomics as the RoCE test allows.
const iwarpIRDORD = uint16(min(maxOutReads, iwarp.MaxIRDORD))

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

// listenIWARP listens on at for the peer's QPs and accepts each QP index
// once; a request it cannot take is rejected. Every answer's outcome goes
// to the channel returned, which holds one per QP (waitAccepted reads
// them).
func (s *side) listenIWARP(at netip.AddrPort) (*iwarp.Listener, <-chan error, error) {
	accepted := make(chan error, len(s.qps))
	// The handler must not block: an outcome that finds the channel full
	// comes after one per QP, which ended the wait already.
	tell := func(err error) {
		select {
		case accepted <- err:
		default:
		}
	}
	var mu sync.Mutex
	taken := make([]bool, len(s.qps))
	l, err := s.iw.stack.Listen(at, func(req *iwarp.ConnRequest) {
		i, err := qpIndexOf(req.PrivateData, len(s.qps))
		if err == nil {
			mu.Lock()
			if taken[i] {
				err = fmt.Errorf("perf: a second connection request for QP %d", i)
			}
			taken[i] = true
			mu.Unlock()
		}
		if err != nil {
			req.Reject(nil)
			tell(err)
			return
		}
		if err := req.Accept(s.qps[i].qp.QPN(), nil, iwarpIRDORD, iwarpIRDORD); err != nil {
			tell(fmt.Errorf("perf: accept QP %d: %w", i, err))
			return
		}
		tell(nil)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("perf: iWARP listen on %v: %w", at, err)
	}
	return l, accepted, nil
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
// for every QP, and waits until all are established (in RTS).
func (s *side) connectQPs(ctx context.Context, to netip.AddrPort) error {
	done := make(chan iwarp.ConnectResult, len(s.qps))
	for i, q := range s.qps {
		pd := binary.BigEndian.AppendUint32(nil, uint32(i))
		if err := s.iw.stack.Connect(q.qp.QPN(), to, pd, iwarpIRDORD, iwarpIRDORD, func(r iwarp.ConnectResult) { done <- r }); err != nil {
			return fmt.Errorf("perf: connect QP %d to %v: %w", i, to, err)
		}
	}
	timer := time.NewTimer(cmTimeout)
	defer timer.Stop()
	for range s.qps {
		select {
		case r := <-done:
			if r.Err != nil {
				return fmt.Errorf("perf: connect QP %d to %v: %w", s.byQP[r.QPN], to, r.Err)
			}
		case <-timer.C:
			return fmt.Errorf("perf: iWARP connection setup to %v timed out", to)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
