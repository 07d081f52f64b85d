// The client's side of a test, step by step over perftest's side channel
// (perftest.go draws it): versions, system data, MTU, the key exchange,
// the hand shakes, the loop, the end's hand shake and report exchange,
// and, when the server is rnic too, rnic's data check, raw baseline and
// result before "done".

package perf

import (
	"context"
	"fmt"
	"time"

	"github.com/rnic/rnic/nic/ibv"
)

// client is the client's sequence of steps.
func client(ctx context.Context, r *resolved, s *side, ch *channel) (*Result, error) {
	ch.perftest = true
	res, err := clientSteps(ctx, r, s, ch, newResult(r))
	if err != nil {
		ch.fail(err)
	}
	return res, err
}

func clientSteps(ctx context.Context, r *resolved, s *side, ch *channel, res *Result) (*Result, error) {
	res.GIDIndex = s.gid
	rnic, err := clientPreamble(r, ch)
	if err != nil {
		return nil, err
	}
	s.serverFirst = !rnic
	res.MTU = r.mtu.Bytes()
	t0 := time.Now()
	if err := s.clientConnect(ctx, ch, res); err != nil {
		return nil, err
	}
	res.ConnectSeconds = time.Since(t0).Seconds()
	if err := s.postClientRecvs(r); err != nil {
		return nil, err
	}
	for range r.handShakes() { // the last one: the server is ready
		if _, err := ch.xchgKey(true, s.key(0)); err != nil {
			return nil, err
		}
	}
	if err := s.measure(ctx, r, res); err != nil {
		return nil, err
	}
	if r.endHandShake() {
		if _, err := ch.xchgKey(true, s.key(0)); err != nil { // the test is over
			return nil, err
		}
	}
	if r.tradesReports() {
		if _, err := ch.xchgReports(true, clientReport(r, res)); err != nil {
			return nil, err
		}
		if _, err := ch.xchgKey(true, s.key(0)); err != nil {
			return nil, err
		}
	}
	if !rnic {
		res.Check.Skipped = skippedPerftest
		res.RawSkipped = "a run against perftest"
		if !r.endHandShake() {
			return res, nil
		}
		return res, ch.sayDone()
	}
	return clientEnd(ctx, r, s, ch, res)
}

// clientPreamble trades the versions (rnic says whether the server is
// rnic's, which is then told the test), the system data and the MTUs,
// setting r.mtu to the smaller.
func clientPreamble(r *resolved, ch *channel) (rnic bool, err error) {
	if rnic, err = ch.xchgVersions(true); err != nil {
		return false, err
	}
	if rnic {
		// rnic's server needs no flags: it is told the test.
		if err := ch.send(helloOf(&r.Config)); err != nil {
			return false, err
		}
		var a ack
		if err := ch.recv(&a); err != nil {
			return false, err
		}
		// The client's side is open already: its MR allows binding
		// only if it was asked for --mw too.
		switch {
		case r.MW && !a.MW:
			return false, fmt.Errorf("%w: --mw: the server binds no windows (an older rnic?)", ErrConfig)
		case a.MW && !r.MW:
			return false, fmt.Errorf("%w: the server runs --mw: give the client --mw too", ErrConfig)
		}
	} else if r.MW {
		return false, errMWPerftestPeer
	}
	if err := ch.xchgSysData(true); err != nil {
		return false, err
	}
	if r.mtu, err = ch.xchgMTU(true, r.mtu); err != nil {
		return false, err
	}
	return rnic, nil
}

// clientConnect trades every QP's key with the server and connects them
// (with --mw, then the windows' keys).
func (s *side) clientConnect(ctx context.Context, ch *channel, res *Result) error {
	own, peers, err := s.xchgKeys(ch)
	if err != nil {
		return err
	}
	if s.cfg.MW {
		if own, peers, err = s.xchgWindowKeys(ctx, ch); err != nil {
			return err
		}
	}
	res.Client, res.Server = own, peers
	return nil
}

// clientEnd is the end of a run against rnic's server, over either
// transport: its report (its check of this side's writes), the raw
// transport's run (UDP; iWARP: TCP), and the result, which the server
// returns as its own. Over RoCEv2 the channel then says "done", as
// perftest's; over iWARP the QPs disconnect.
func clientEnd(ctx context.Context, r *resolved, s *side, ch *channel, res *Result) (*Result, error) {
	var rep serverReport
	if err := ch.recv(&rep); err != nil {
		return nil, err
	}
	res.Check = rep.Check
	if r.clientChecks() {
		res.Check = s.landedCheck(ctx, serverSeed)
	}
	_, ownNet := r.dev.(ibv.Network)
	if r.NoRaw || r.TAP != nil || ownNet {
		switch {
		case r.TAP != nil:
			res.RawSkipped = "TAP mode"
		case r.NoRaw:
		case ownNet:
			// The raw transports are the kernel's, which the device's
			// own network need not be.
			res.RawSkipped = "a run on the device's own network"
		}
		if err := ch.send(rawRequest{}); err != nil {
			return nil, err
		}
	} else if err := s.clientRaw(ctx, r, ch, res); err != nil {
		return nil, err
	}
	if err := ch.send(res); err != nil {
		return nil, err
	}
	if s.iw != nil {
		s.disconnectIWARP() // the server does the same
		return res, nil
	}
	if err := ch.sayDone(); err != nil {
		return nil, fmt.Errorf("perf: side channel: %w", err)
	}
	return res, nil
}

// clientRaw runs the raw transport's measurement: UDP's, or over iWARP
// TCP's.
func (s *side) clientRaw(ctx context.Context, r *resolved, ch *channel, res *Result) error {
	if s.iw != nil {
		return clientRawTCP(ctx, r, ch, res)
	}
	return clientRaw(ctx, r, ch, res)
}

// skippedPerftest is Check.Skipped against a perftest peer, whose buffers
// hold no pattern rnic knows.
const skippedPerftest = "the peer is perftest"
