// The server's side of a test, step by step over perftest's side channel,
// mirroring client.go: it reads where the client writes and writes where
// it reads. A perftest client tells the server nothing of the test, so the
// server then runs the test of its own flags, as perftest's server does;
// an rnic client sends its parameters after the versions.

package perf

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/rnic/rnic/nic/ibv"
)

// serve is the server's sequence of steps; it returns the client's result
// (against perftest: its own). The device is n; local is the address the
// side channel runs on, whose GID the QPs send from.
func serve(ctx context.Context, r *resolved, n ibv.Device, local netip.Addr, ch *channel) (*Result, error) {
	ch.perftest = true
	if p, err := ch.r.Peek(1); err == nil && p[0] == '{' {
		// rnic's own JSON hello: an iWARP client, which this RoCEv2
		// server refuses saying so.
		ch.mayFail = true
		if err := recvHello(r, ch); err != nil {
			return nil, err
		}
		err := fmt.Errorf("%w: the client speaks rnic's iWARP exchange, this server perftest's", ErrConfig)
		ch.fail(err)
		return nil, err
	}
	rnic, err := ch.xchgVersions(false)
	if err != nil {
		ch.fail(err)
		return nil, err
	}
	if rnic {
		if err := recvHello(r, ch); err != nil {
			return nil, err
		}
		if err := ch.send(ack{OK: true, MW: r.MW}); err != nil {
			return nil, err
		}
	} else if err := r.testDefaults(); err != nil {
		return nil, err
	} else if r.MW {
		ch.fail(errMWPerftestPeer)
		return nil, errMWPerftestPeer
	}
	res, err := serveSteps(ctx, r, n, local, ch, rnic)
	if err != nil {
		ch.fail(err)
	}
	return res, err
}

func serveSteps(ctx context.Context, r *resolved, n ibv.Device, local netip.Addr, ch *channel, rnic bool) (*Result, error) {
	if err := ch.xchgSysData(false); err != nil {
		return nil, err
	}
	var err error
	if r.mtu, err = ch.xchgMTU(false, r.mtu); err != nil {
		return nil, err
	}
	s, err := openSide(r, n, local, sideSpec{name: "rnic0", seed: serverSeed})
	if err != nil {
		return nil, err
	}
	defer s.close()
	s.serverFirst = !rnic
	own := newResult(r)
	own.GIDIndex, own.MTU = s.gid, r.mtu.Bytes()
	if err := s.serverConnect(ctx, ch, own); err != nil {
		return nil, err
	}
	// Receives go up before the client may send.
	posted, err := s.postServerRecvs(r)
	if err != nil {
		return nil, err
	}
	for range r.handShakes() { // the last one: this side is ready
		if _, err := ch.xchgKey(false, s.key(0)); err != nil {
			return nil, err
		}
	}
	if err := s.serverRun(ctx, r, ch, posted); err != nil {
		return nil, err
	}
	var peerRep BWReport
	if r.tradesReports() {
		// perftest's server sends whatever its report holds; rnic's, the
		// test's size and iterations and no figures.
		if peerRep, err = ch.xchgReports(false, BWReport{Size: uint64(r.Size), Iters: uint64(r.Iters)}); err != nil {
			return nil, err
		}
		if _, err := ch.xchgKey(false, s.key(0)); err != nil {
			return nil, err
		}
	}
	if !rnic {
		own.Check.Skipped = skippedPerftest
		own.RawSkipped = "a run against perftest"
		s.serverFigures(r, own, peerRep)
		if !r.endHandShake() {
			return own, nil
		}
		return own, ch.sayDone()
	}
	return serverEnd(ctx, r, s, ch, local)
}

// serverConnect trades every QP's key with the client and connects them
// (with --mw, then the windows' keys).
func (s *side) serverConnect(ctx context.Context, ch *channel, own *Result) error {
	keys, peers, err := s.xchgKeys(ch)
	if err != nil {
		return err
	}
	if s.cfg.MW {
		if keys, peers, err = s.xchgWindowKeys(ctx, ch); err != nil {
			return err
		}
	}
	own.Client, own.Server = peers, keys
	return nil
}

// serverRun runs the server's own loop, if it has one, while the side
// channel waits for the client's end: the hand shake it sends then.
func (s *side) serverRun(ctx context.Context, r *resolved, ch *channel, posted []int) error {
	loop := s.startServerLoop(ctx, r, posted)
	if r.endHandShake() {
		var hs [KeyMsgSizeGID]byte
		if err := ch.readFixed(hs[:]); err != nil {
			loop.stop()
			return err
		}
		if _, err := ParseKey(hs[:]); err != nil {
			loop.stop()
			return err
		}
	}
	if err := loop.wait(); err != nil {
		return err
	}
	if r.endHandShake() {
		k := s.key(0).MarshalGID()
		if err := ch.write(k[:]); err != nil {
			return err
		}
	}
	return nil
}

// serverEnd is the end of a run against rnic's client, over either
// transport: the server's report (its check of the client's writes), the
// raw transport's run the client asks for (UDP; iWARP: TCP from local),
// and the client's result, which the server returns. Over RoCEv2 the
// channel then says "done", as perftest's; over iWARP the QPs disconnect.
func serverEnd(ctx context.Context, r *resolved, s *side, ch *channel, local netip.Addr) (*Result, error) {
	var rep serverReport
	if !r.clientChecks() {
		rep.Check = s.landedCheck(ctx, clientSeed)
	}
	if err := ch.send(rep); err != nil {
		return nil, err
	}
	var rq rawRequest
	if err := ch.recv(&rq); err != nil {
		return nil, err
	}
	raw := serverRaw
	if s.iw != nil {
		raw = func(r *resolved, ch *channel, rq rawRequest) error { return serverRawTCP(r, local, ch, rq) }
	}
	if err := raw(r, ch, rq); err != nil {
		return nil, err
	}
	var res Result
	if err := ch.recv(&res); err != nil {
		return nil, err
	}
	if s.iw != nil {
		s.disconnectIWARP() // the client does the same
		return &res, nil
	}
	if err := ch.sayDone(); err != nil {
		return nil, err
	}
	return &res, nil
}

// recvStats are a SEND bw server's own figures, as perftest's server
// prints them: the messages over the time from the first poll that found
// some to the last (no peak: the server sees no posts).
func (s *side) recvStats() *BWStats {
	ops := int64(s.cfg.Iters) * int64(len(s.qps))
	st := &BWStats{Ops: ops, Bytes: ops * int64(s.cfg.Size)}
	if span := s.recvLast.Sub(s.recvFirst); span > 0 {
		sec := float64(span) / float64(time.Second)
		st.AvgMBps = float64(st.Bytes) / sec / (1 << 20)
		st.MsgRateMpps = float64(ops) / sec / 1e6
	}
	return st
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
