// The server of a two-process iWARP test, step by step over the side
// channel, mirroring iwarp_client.go:
//
//	client                                server
//	hello (transport "iwarp") ──────────▶ opens its device, listens (CM)
//	                          ◀────────── ack, the CM port (18516)
//	key of QP i ────────────────────────▶
//	                          ◀────────── key of QP i          (each QP)
//	MPA Request, QP index i ════════════▶ Accept on QP i      (each QP)
//	                          ◀══════════ MPA Reply
//	ack: connected ─────────────────────▶ posts its receives (SEND)
//	                          ◀────────── ack: ready
//	the loop                              its loop (SEND bw: credits ──▶)
//	finished ───────────────────────────▶ data check
//	                          ◀────────── its check
//	raw TCP request, result ────────────▶ prints the result
//
// (─ the side channel, ═ the iWARP connection.) The keys are perftest's
// messages; an iWARP QP needs no PSN, but its STag (RKey) and address do
// travel this way, as rdma_cm tools exchange them.

package perf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
)

// cmPort is the port the server's connection manager listens on.
func (c *Config) cmPort() uint16 {
	switch {
	case c.IWARPPort == 0:
		return DefaultIWARPPort
	case c.IWARPPort < 0:
		return 0 // any free port
	}
	return uint16(c.IWARPPort)
}

// serveIWARP is the server's sequence of steps on the side channel conn;
// it returns the client's result.
func serveIWARP(ctx context.Context, r *resolved, h *host, conn net.Conn) (*Result, error) {
	ch := newChannel(conn)
	if p, err := ch.r.Peek(1); err == nil && p[0] != '{' {
		// perftest's version string: a RoCEv2 client (perftest.go).
		err := fmt.Errorf("%w: the client runs RoCEv2; this server iWARP: start it without --iwarp", ErrConfig)
		ch.fail(err)
		return nil, err
	}
	if err := recvHello(r, ch); err != nil {
		return nil, err
	}
	// The address the client reached: the device's GID, where the CM
	// listens.
	local := localAddr(conn, r.Addr)
	s, err := openIWARPSide(r, h, local, sideSpec{name: "rnic0", seed: serverSeed}, iwarpMSS(r, conn))
	if err != nil {
		ch.fail(err)
		return nil, err
	}
	defer s.close()
	if err := s.acceptIWARP(ctx, r, ch); err != nil {
		return nil, err
	}
	// Receives go up before the client may send.
	posted, err := s.postServerRecvs(r)
	if err != nil {
		ch.fail(err)
		return nil, err
	}
	if err := s.iwarpServerRun(ctx, r, ch, posted); err != nil {
		return nil, err
	}
	return serverEnd(ctx, r, s, ch, local)
}

// acceptIWARP listens on the CM port of the NIC's address, tells the
// client the port, trades the QPs' keys and accepts the client's
// connection of every QP.
func (s *side) acceptIWARP(ctx context.Context, r *resolved, ch *channel) error {
	l, accepted, err := s.listenIWARP(r.cmPort())
	if err != nil {
		ch.fail(err)
		return err
	}
	defer l.Close()
	if err := ch.send(ack{OK: true, IWARPPort: int(l.Port())}); err != nil {
		return err
	}
	for i := range s.qps {
		peer, err := ch.recvKey()
		if err != nil {
			return err
		}
		if err := ch.sendKey(s.key(i)); err != nil {
			return err
		}
		s.qps[i].peer = peer
	}
	var a ack
	if err := ch.recv(&a); err != nil { // the client's QPs are connected
		if aerr := failedAccept(accepted); aerr != nil {
			return aerr // why the client's connection failed
		}
		return err
	}
	if err := waitAccepted(ctx, accepted, len(s.qps)); err != nil {
		ch.fail(err)
		return err
	}
	return nil
}

// iwarpServerRun tells the client this side is ready and runs the
// server's own loop, if it has one, while the side channel waits for the
// client's end. Its SEND bw loop writes on the side channel meanwhile:
// the credits, then their end (or its failure).
func (s *side) iwarpServerRun(ctx context.Context, r *resolved, ch *channel, posted []int) error {
	sendBW := r.Op == OpSend && r.Mode == ModeBW
	if sendBW {
		s.onRecv = creditSender(r, ch, posted)
	}
	if err := ch.send(ack{OK: true}); err != nil {
		return err
	}
	roleCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	roleErr := make(chan error, 1)
	go func() {
		switch {
		case sendBW:
			err := s.receiveAll(roleCtx, posted)
			if err == nil {
				err = ch.send(recvCredit{Done: true})
			} else if roleCtx.Err() == nil {
				ch.fail(err)
			}
			roleErr <- err
		case (r.Op == OpSend || r.Op == OpWrite) && r.Mode == ModeLat:
			roleErr <- s.serveLat(roleCtx)
		default:
			roleErr <- nil
		}
	}()
	var f finished
	if err := ch.recv(&f); err != nil {
		cancel()
		if rerr := <-roleErr; rerr != nil && !errors.Is(rerr, context.Canceled) {
			return rerr
		}
		return err
	}
	if err := <-roleErr; err != nil {
		if !sendBW { // (the SEND bw loop told the client itself)
			ch.fail(err)
		}
		return err
	}
	return nil
}

// creditSender is the server's onRecv in a SEND bw test: it tells the
// client the receives posted on a QP whenever a quarter of RxDepth more
// are up, and when the last one is, so that the client never sends into
// an empty receive queue and never waits for more than that quarter.
// posted is what each QP starts with.
func creditSender(r *resolved, ch *channel, posted []int) func(i int) error {
	batch := max(1, r.RxDepth/4)
	count, told := slices.Clone(posted), slices.Clone(posted)
	return func(i int) error {
		count[i]++
		if count[i]-told[i] < batch && count[i] < r.Iters {
			return nil
		}
		told[i] = count[i]
		return ch.send(recvCredit{QP: i, Posted: count[i]})
	}
}
