// The server's side of a test, step by step over the side channel,
// mirroring client.go: it reads where the client writes and writes where
// it reads.

package perf

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/nic/embedded"
)

// serve is the server's sequence of steps; it returns the client's result.
// The NIC is n; local is the address the side channel runs on, whose GID
// the QPs send from.
func serve(ctx context.Context, r *resolved, n *embedded.NIC, local netip.Addr, ch *channel) (*Result, error) {
	if err := recvHello(r, ch); err != nil {
		return nil, err
	}
	s, err := openSide(r, n, local, sideSpec{name: "rnic0", seed: serverSeed})
	if err != nil {
		ch.fail(err)
		return nil, err
	}
	defer s.close()
	if err := ch.send(ack{OK: true}); err != nil {
		return nil, err
	}
	for i := range s.qps {
		peer, err := ch.recvKey()
		if err != nil {
			return nil, err
		}
		if err := ch.sendKey(s.key(i)); err != nil {
			return nil, err
		}
		if err := s.connect(i, peer); err != nil {
			ch.fail(err)
			return nil, err
		}
	}
	// Receives go up before the client may send.
	posted := make([]int, len(s.qps))
	if r.Op == OpSend {
		for i := range s.qps {
			posted[i] = min(r.RxDepth, r.Iters)
			if err := s.postRecv(i, posted[i]); err != nil {
				ch.fail(err)
				return nil, err
			}
		}
	}
	if err := ch.send(ack{OK: true}); err != nil {
		return nil, err
	}

	// The server's own loop, if it has one, runs while the side channel
	// waits for the client's end.
	roleCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	roleErr := make(chan error, 1)
	go func() {
		switch {
		case r.Op == OpSend && r.Mode == ModeBW:
			roleErr <- s.receiveAll(roleCtx, posted)
		case (r.Op == OpSend || r.Op == OpWrite) && r.Mode == ModeLat:
			roleErr <- s.serveLat(roleCtx)
		default:
			roleErr <- nil
		}
	}()
	var f finished
	if err := ch.recv(&f); err != nil {
		cancel()
		<-roleErr
		return nil, err
	}
	if err := <-roleErr; err != nil {
		ch.fail(err)
		return nil, err
	}
	var rep serverReport
	if !r.clientChecks() {
		rep.Check = s.checkTargets(clientSeed, r.Iters)
	}
	if err := ch.send(rep); err != nil {
		return nil, err
	}

	var rq rawRequest
	if err := ch.recv(&rq); err != nil {
		return nil, err
	}
	if err := serverRaw(r, ch, rq); err != nil {
		return nil, err
	}
	var res Result
	if err := ch.recv(&res); err != nil {
		return nil, err
	}
	return &res, nil
}

// recvHello reads the client's test into r and checks it: the protocol,
// the transport (r.IWARP says this server's), the parameters. A refusal
// is told to the client too.
func recvHello(r *resolved, ch *channel) error {
	var h hello
	if err := ch.recv(&h); err != nil {
		return err
	}
	err := h.checkTransport(r.IWARP)
	if h.Proto != protoVersion {
		err = fmt.Errorf("%w: protocol %q, this server speaks %q", ErrConfig, h.Proto, protoVersion)
	}
	if err == nil {
		h.apply(&r.Config)
		if r.IWARP {
			// The path MTU means nothing to iWARP (the FPDUs follow
			// this side's MSS): the client's must not fail this
			// server's TAP check.
			r.MTU = 0
		}
		err = r.testDefaults()
	}
	if err != nil {
		ch.fail(err)
		return err
	}
	return nil
}
