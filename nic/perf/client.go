// The client's side of a test, step by step over the side channel: the
// test's parameters, the key exchange, the loop, the server's data check,
// the raw UDP measurement, the result.

package perf

import "context"

// client is the client's sequence of steps.
func client(ctx context.Context, r *resolved, s *side, ch *channel) (*Result, error) {
	res := newResult(r)
	res.GIDIndex = s.gid
	if err := ch.send(helloOf(&r.Config)); err != nil {
		return nil, err
	}
	var a ack
	if err := ch.recv(&a); err != nil {
		return nil, err
	}
	for i := range s.qps {
		k := s.key(i)
		if err := ch.sendKey(k); err != nil {
			return nil, err
		}
		peer, err := ch.recvKey()
		if err != nil {
			return nil, err
		}
		if err := s.connect(i, peer); err != nil {
			ch.fail(err)
			return nil, err
		}
		res.Client, res.Server = append(res.Client, k), append(res.Server, peer)
	}
	if r.Op == OpSend && r.Mode == ModeLat {
		for i := range s.qps {
			if err := s.postRecv(i, min(r.RxDepth, r.Iters)); err != nil {
				ch.fail(err)
				return nil, err
			}
		}
	}
	if err := ch.recv(&a); err != nil { // the server is ready
		return nil, err
	}

	var err error
	if r.Mode == ModeBW {
		var t *bwTimes
		if t, err = s.runBW(ctx); err == nil {
			st := bwStats(r.Size, t.posted, t.completed, r.CQMod)
			res.BW = &st
		}
	} else {
		var samples []int64
		if samples, err = s.runLat(ctx); err == nil {
			st := latStats(samples, r.rttFactor())
			res.Lat = &st
		}
	}
	if err != nil {
		ch.fail(err)
		return nil, err
	}
	if err := ch.send(finished{Done: true}); err != nil {
		return nil, err
	}
	var rep serverReport
	if err := ch.recv(&rep); err != nil {
		return nil, err
	}
	res.Check = rep.Check
	if r.clientChecks() {
		res.Check = s.checkTargets(serverSeed, r.Iters)
	}

	if r.NoRaw || r.TAP != nil {
		if r.TAP != nil {
			res.RawSkipped = "TAP mode"
		}
		if err := ch.send(rawRequest{}); err != nil {
			return nil, err
		}
	} else if err := clientRaw(ctx, r, ch, res); err != nil {
		return nil, err
	}
	if err := ch.send(res); err != nil {
		return nil, err
	}
	return res, nil
}
