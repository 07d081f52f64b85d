// The phases every role's sequence of steps shares, whatever its side
// channel (perftest's, rnic's iWARP exchange, rdma_cm's control QP): the
// receives posted before the client may send, the client's timed loop,
// the server's own loop while the side channel waits, and the server's
// figures at the end.

package perf

import "context"

// postServerRecvs posts a SEND test's receives on the server before the
// client may send; it returns how many went up on each QP (none for the
// other operations).
func (s *side) postServerRecvs(r *resolved) ([]int, error) {
	posted := make([]int, len(s.qps))
	if r.Op != OpSend {
		return posted, nil
	}
	for i := range s.qps {
		posted[i] = min(r.RxDepth, r.Iters)
		if err := s.postRecv(i, posted[i]); err != nil {
			return nil, err
		}
	}
	return posted, nil
}

// postClientRecvs posts a SEND lat client's receives: the server's
// answers land in them.
func (s *side) postClientRecvs(r *resolved) error {
	if r.Op != OpSend || r.Mode != ModeLat {
		return nil
	}
	for i := range s.qps {
		if err := s.postRecv(i, min(r.RxDepth, r.Iters)); err != nil {
			return err
		}
	}
	return nil
}

// measure runs the client's timed loop, bw or lat, and puts its figures in
// res (none when the loop fails).
func (s *side) measure(ctx context.Context, r *resolved, res *Result) error {
	if r.Mode == ModeBW {
		t, err := s.runBW(ctx)
		if err != nil {
			return err
		}
		st := bwStats(r.Size, t.posted, t.completed, r.CQMod)
		st.QPsDone = t.qpsDone
		res.BW = &st
		return nil
	}
	samples, err := s.runLat(ctx)
	if err != nil {
		return err
	}
	st := latStats(samples, r.rttFactor())
	res.Lat = &st
	return nil
}

// clientReport is the bw client's report to the server (perftest's
// report exchange).
func clientReport(r *resolved, res *Result) BWReport {
	return BWReport{Size: uint64(r.Size), Iters: uint64(r.Iters),
		PeakMBps: res.BW.PeakMBps, AvgMBps: res.BW.AvgMBps, MsgRateMpps: res.BW.MsgRateMpps}
}

// serverLoop is the server's own loop, if it has one (SEND bw: receive
// everything; SEND or WRITE lat: answer each message), on a goroutine
// while the side channel waits for the client's end.
type serverLoop struct {
	cancel context.CancelFunc
	err    chan error
}

func (s *side) startServerLoop(ctx context.Context, r *resolved, posted []int) *serverLoop {
	ctx, cancel := context.WithCancel(ctx)
	l := &serverLoop{cancel: cancel, err: make(chan error, 1)}
	go func() {
		switch {
		case r.Op == OpSend && r.Mode == ModeBW:
			l.err <- s.receiveAll(ctx, posted)
		case (r.Op == OpSend || r.Op == OpWrite) && r.Mode == ModeLat:
			l.err <- s.serveLat(ctx)
		default:
			l.err <- nil
		}
	}()
	return l
}

// wait returns the loop's error once it has ended.
func (l *serverLoop) wait() error {
	defer l.cancel()
	return <-l.err
}

// stop ends the loop early (the side channel failed) and waits for it.
func (l *serverLoop) stop() {
	l.cancel()
	<-l.err
}

// serverFigures sets the server's own figures, as perftest's server
// prints them: the client's report when the two trade them, else its own
// receive rate (SEND bw) or its answers' latency (nil for READ: the
// server's CPU took no part).
func (s *side) serverFigures(r *resolved, own *Result, peerRep BWReport) {
	switch {
	case r.tradesReports():
		own.BW = &BWStats{PeakMBps: peerRep.PeakMBps, AvgMBps: peerRep.AvgMBps, MsgRateMpps: peerRep.MsgRateMpps}
	case r.Op == OpSend && r.Mode == ModeBW:
		own.BW = s.recvStats()
	case r.Mode == ModeLat:
		own.Lat = s.serverLatStats()
	}
}
