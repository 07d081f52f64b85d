// The client of a two-process iWARP test, step by step over the side
// channel (the sequence is drawn in iwarp_server.go): the test's
// parameters, the keys, the QPs' connections through the connection
// manager, the loop, the server's data check, the raw TCP measurement,
// the result.

package perf

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"
)

// iwarpClient is the client's sequence of steps.
func iwarpClient(ctx context.Context, r *resolved, s *side, ch *channel) (*Result, error) {
	res := newResult(r)
	res.IWARP, res.MTU = true, s.iw.mss
	if err := s.connectIWARPClient(ctx, r, ch, res); err != nil {
		return nil, err
	}
	var credit []atomic.Int64
	if r.Op == OpSend && r.Mode == ModeBW {
		// The receives the server has posted on QP i: as many as it
		// starts with, then what it tells.
		credit = make([]atomic.Int64, len(s.qps))
		for i := range credit {
			credit[i].Store(int64(min(r.RxDepth, r.Iters)))
		}
		s.sendCredit = func(i int) int { return int(credit[i].Load()) }
	} else if err := s.postClientRecvs(r); err != nil {
		ch.fail(err)
		return nil, err
	}
	var a ack
	if err := ch.recv(&a); err != nil { // the server is ready
		return nil, err
	}
	if err := s.measureIWARP(ctx, r, ch, credit, res); err != nil {
		return nil, err
	}
	if err := ch.send(finished{Done: true}); err != nil {
		return nil, err
	}
	return clientEnd(ctx, r, s, ch, res)
}

// connectIWARPClient tells the server the test, trades the QPs' keys and
// connects every QP to the server's CM port.
func (s *side) connectIWARPClient(ctx context.Context, r *resolved, ch *channel, res *Result) error {
	if err := ch.send(helloOf(&r.Config)); err != nil {
		return err
	}
	var a ack
	if err := ch.recv(&a); err != nil {
		return err
	}
	if a.IWARPPort <= 0 || a.IWARPPort > 65535 {
		err := fmt.Errorf("perf: the server named no iWARP port (%d)", a.IWARPPort)
		ch.fail(err)
		return err
	}
	for i := range s.qps {
		k := s.key(i)
		if err := ch.sendKey(k); err != nil {
			return err
		}
		peer, err := ch.recvKey()
		if err != nil {
			return err
		}
		s.qps[i].peer = peer
		res.Client, res.Server = append(res.Client, k), append(res.Server, peer)
	}
	if err := s.connectQPs(ctx, netip.AddrPortFrom(r.server, uint16(a.IWARPPort))); err != nil {
		ch.fail(err)
		return err
	}
	return ch.send(ack{OK: true}) // connected
}

// measureIWARP runs the timed loop. In a SEND bw test the side channel
// brings the server's credits meanwhile; it stops the loop if the server
// fails.
func (s *side) measureIWARP(ctx context.Context, r *resolved, ch *channel, credit []atomic.Int64, res *Result) error {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	credits := make(chan error, 1)
	if credit != nil {
		go func() {
			err := readCredits(ch, credit)
			if err != nil {
				cancel()
			}
			credits <- err
		}()
	} else {
		credits <- nil
	}
	err := s.measure(lctx, r, res)
	stopped := lctx.Err() != nil // by the credits' reader, or ctx
	if err != nil && !stopped {
		// The loop failed on its own: tell the server, which then ends
		// the credits (or the connection) — in a bounded time.
		ch.fail(err)
		ch.conn.SetReadDeadline(time.Now().Add(landTimeout))
	}
	if cerr := <-credits; cerr != nil && ctx.Err() == nil && (err == nil || stopped) {
		return cerr // the server failed (or went) first
	}
	return err
}

// readCredits reads the server's credits into credit until their end.
func readCredits(ch *channel, credit []atomic.Int64) error {
	for {
		var c recvCredit
		if err := ch.recv(&c); err != nil {
			return err
		}
		if c.Done {
			return nil
		}
		if c.QP < 0 || c.QP >= len(credit) {
			return fmt.Errorf("perf: side channel: credit for QP %d of %d", c.QP, len(credit))
		}
		credit[c.QP].Store(int64(c.Posted))
	}
}
