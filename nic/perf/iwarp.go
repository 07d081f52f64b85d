// perf over iWARP: both sides in this process, two iWARP devices on
// kernel TCP between the server's and the client's addresses, each QP pair
// connected through the iWARP connection manager (MPA Request and Reply,
// RTR). The loops, statistics, data check and report are the RoCE test's;
// the raw figure is kernel TCP's between the same addresses in the same
// run (rawtcp.go).
//
// iWARP's local completion semantics (siw's) show in the figures: a SEND or
// RDMA WRITE completes once the stream took its FPDUs, before the peer has
// them. So a WRITE bw test measures how fast the engine framed and queued
// the data (bounded by the stream's send buffer, hence by TCP), and the
// data check waits for the data to land; a SEND bw test is paced by the
// receives the server has posted, since a SEND that finds none ends the
// connection (iWARP has no RNR retry).

package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream"
)

// IWARPMSS is the MSS the iWARP engines size their FPDUs for: Linux
// loopback's (65483), which makes every FPDU as large as MPA allows.
const IWARPMSS = 65483

// iwSide is the iWARP device of a side.
type iwSide struct {
	stack *iwarp.Stack
	dev   *nic.Device
}

// runIWARP runs cfg over iWARP with both sides in this process.
func runIWARP(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Server != "" || cfg.Serve {
		return nil, fmt.Errorf("%w: --iwarp runs both sides in this process (no --serve, no server)", ErrConfig)
	}
	if cfg.Link != nil || cfg.ServerLink != nil || cfg.Pcap != nil {
		return nil, fmt.Errorf("%w: --iwarp runs on kernel TCP: no link, no pcap", ErrConfig)
	}
	r, err := cfg.resolve(ctx)
	if err != nil {
		return nil, err
	}
	srv, err := openIWARPSide(r, r.server, "rnic0", serverSeed)
	if err != nil {
		return nil, err
	}
	defer srv.closeIWARP()
	cli, err := openIWARPSide(r, r.Addr, "rnic1", clientSeed)
	if err != nil {
		return nil, err
	}
	defer cli.closeIWARP()
	res := newResult(r)
	res.IWARP, res.MTU = true, IWARPMSS
	if err := connectIWARP(ctx, srv, cli, res); err != nil {
		return nil, err
	}

	// Receives go up before the client may send.
	posted := make([]int, len(srv.qps))
	if r.Op == OpSend {
		for i := range srv.qps {
			posted[i] = min(r.RxDepth, r.Iters)
			if err := srv.postRecv(i, posted[i]); err != nil {
				return nil, err
			}
		}
		if r.Mode == ModeLat {
			for i := range cli.qps {
				if err := cli.postRecv(i, min(r.RxDepth, r.Iters)); err != nil {
					return nil, err
				}
			}
		} else {
			// Credit: the receives the server has posted on QP i.
			reposted := make([]atomic.Int64, len(srv.qps))
			srv.onRecv = func(i int) { reposted[i].Add(1) }
			cli.sendCredit = func(i int) int { return posted[i] + int(reposted[i].Load()) }
		}
	}

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srvErr := make(chan error, 1)
	go func() {
		switch {
		case r.Op == OpSend && r.Mode == ModeBW:
			srvErr <- srv.receiveAll(sctx, append([]int(nil), posted...))
		case (r.Op == OpSend || r.Op == OpWrite) && r.Mode == ModeLat:
			srvErr <- srv.serveLat(sctx)
		default:
			srvErr <- nil
		}
	}()
	if r.Mode == ModeBW {
		var t *bwTimes
		if t, err = cli.runBW(ctx); err == nil {
			st := bwStats(r.Size, t.posted, t.completed, r.CQMod)
			res.BW = &st
		}
	} else {
		var samples []int64
		if samples, err = cli.runLat(ctx); err == nil {
			st := latStats(samples, r.rttFactor())
			res.Lat = &st
		}
	}
	if err != nil {
		cancel()
		<-srvErr
		return nil, err
	}
	if err := <-srvErr; err != nil {
		return nil, fmt.Errorf("perf: server: %w", err)
	}
	// The data check. A WRITE completes before it has landed: wait (for
	// a while) until the targets hold what was sent.
	checker, seed := srv, clientSeed
	if r.clientChecks() {
		checker, seed = cli, serverSeed
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		res.Check = checker.checkTargets(seed, r.Iters)
		if res.Check.OK() || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if !r.NoRaw {
		rawTCP(ctx, r, res)
	}
	if err := writeReport(r.Out, r.JSON, res, false); err != nil {
		return res, err
	}
	if !res.Check.OK() {
		return res, fmt.Errorf("%w: %d of %d bytes differ", ErrDataMismatch, res.Check.Mismatched, res.Check.Bytes)
	}
	return res, nil
}

// openIWARPSide opens an iWARP device on addr and creates the objects of
// openSide: one buffer with a source and a target region per QP, the CQs,
// the QPs in INIT.
func openIWARPSide(r *resolved, addr netip.Addr, name string, seed byte) (s *side, err error) {
	s = &side{name: name, cfg: r, byQP: map[uint32]int{}, seed: seed, iw: &iwSide{}}
	defer func() {
		if err != nil {
			s.closeIWARP()
		}
	}()
	scfg := iwarp.Config{Clock: clock.NewReal(), Network: &stream.TCP{}, Addr: addr, MSS: IWARPMSS}
	if r.Trace != nil {
		var mu sync.Mutex
		tw := r.Trace
		scfg.Trace = func(e iwarp.TraceEvent) { mu.Lock(); fmt.Fprintf(tw, "%s %v\n", name, e); mu.Unlock() }
	}
	if s.iw.stack, err = iwarp.NewStack(scfg); err != nil {
		return s, err
	}
	if s.iw.dev, err = nic.Open(nic.Config{Name: name, GIDs: []netip.Addr{addr}, Provider: s.iw.stack}); err != nil {
		return s, fmt.Errorf("perf: open iWARP device on %v: %w", addr, err)
	}
	d := s.iw.dev
	reg := region(r.Size)
	s.mem = newBuffer(2 * reg * r.QPs)
	if s.pd, err = d.AllocPD(); err != nil {
		return s, fmt.Errorf("perf: alloc PD: %w", err)
	}
	access := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	if s.mr, err = d.RegMR(s.pd, s.mem.b, access); err != nil {
		return s, fmt.Errorf("perf: register %d bytes: %w", len(s.mem.b), err)
	}
	if s.scq, err = d.CreateCQ(r.QPs*r.TxDepth + 1); err != nil {
		return s, fmt.Errorf("perf: create send CQ: %w", err)
	}
	if s.rcq, err = d.CreateCQ(r.QPs*r.RxDepth + 1); err != nil {
		return s, fmt.Errorf("perf: create receive CQ: %w", err)
	}
	caps := verbs.QPCap{MaxSendWR: uint32(r.TxDepth), MaxRecvWR: uint32(r.RxDepth), MaxSendSGE: 1, MaxRecvSGE: 1}
	for i := 0; i < r.QPs; i++ {
		qp, err := d.CreateQP(s.pd, nic.QPInit{Type: verbs.QPTypeRC, SendCQ: s.scq, RecvCQ: s.rcq, Cap: caps})
		if err != nil {
			return s, fmt.Errorf("perf: create QP %d: %w", i, err)
		}
		off := 2 * reg * i
		q := &qpSide{qp: qp, src: s.mem.b[off : off+r.Size], dst: s.mem.b[off+reg : off+reg+r.Size],
			sva: s.mr.Addr() + uint64(off), dva: s.mr.Addr() + uint64(off+reg)}
		s.qps = append(s.qps, q)
		s.byQP[qp.QPN()] = i
		init := verbs.QPAttr{State: verbs.QPSInit, PortNum: 1,
			AccessFlags: memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic}
		if err := qp.Modify(&init, verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
			return s, fmt.Errorf("perf: QP %d to INIT: %w", i, err)
		}
		fillPattern(q.src, seed, i)
	}
	return s, nil
}

// closeIWARP closes the connections, destroys everything and closes the
// device.
func (s *side) closeIWARP() {
	if s.iw.stack != nil {
		s.iw.stack.Close()
	}
	d := s.iw.dev
	if d == nil {
		return
	}
	for _, q := range s.qps {
		q.qp.Destroy()
	}
	for _, cq := range []*nic.CQ{s.scq, s.rcq} {
		if cq != nil {
			cq.Destroy()
		}
	}
	if s.mr != nil {
		d.DeregMR(s.mr)
	}
	if s.mem != nil {
		s.mem.close()
	}
	if s.pd != nil {
		d.DeallocPD(s.pd)
	}
	d.Close()
}

// iwKey is QP i's key for the report and the peer: QPN, STag and the
// address the peer's operations target (the source region for a READ).
func (s *side) iwKey(i int) Key {
	q := s.qps[i]
	k := Key{OutReads: maxOutReads, QPN: q.qp.QPN(), RKey: s.mr.RKey(), VAddr: q.dva}
	if s.cfg.Op == OpRead {
		k.VAddr = q.sva
	}
	if a := s.iw.dev.GIDs(); len(a) > 0 {
		k.GID = a[0].As16()
	}
	return k
}

// connectIWARP connects the client's QP i to the server's through the
// connection manager: the server listens on an ephemeral port of its
// address, the client connects each QP with the QP's index as private
// data, and the server accepts it on its QP of that index.
func connectIWARP(ctx context.Context, srv, cli *side, res *Result) error {
	ird := uint16(min(maxOutReads, iwarp.MaxIRDORD))
	accepted := make(chan error, len(srv.qps))
	l, err := srv.iw.stack.Listen(netip.AddrPortFrom(srv.iw.dev.GIDs()[0].Unmap(), 0), func(req *iwarp.ConnRequest) {
		if len(req.PrivateData) != 4 {
			req.Reject(nil)
			accepted <- errors.New("perf: connection request without a QP index")
			return
		}
		i := int(binary.BigEndian.Uint32(req.PrivateData))
		if i >= len(srv.qps) {
			req.Reject(nil)
			accepted <- fmt.Errorf("perf: connection request for QP %d", i)
			return
		}
		accepted <- req.Accept(srv.qps[i].qp.QPN(), nil, ird, ird)
	})
	if err != nil {
		return fmt.Errorf("perf: iWARP listen: %w", err)
	}
	defer l.Close()
	done := make(chan iwarp.ConnectResult, len(cli.qps))
	for i, q := range cli.qps {
		pd := binary.BigEndian.AppendUint32(nil, uint32(i))
		if err := cli.iw.stack.Connect(q.qp.QPN(), l.Addr(), pd, ird, ird, func(r iwarp.ConnectResult) { done <- r }); err != nil {
			return fmt.Errorf("perf: connect QP %d: %w", i, err)
		}
	}
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for n := 0; n < 2*len(cli.qps); n++ {
		select {
		case err := <-accepted:
			if err != nil {
				return fmt.Errorf("perf: accept: %w", err)
			}
		case r := <-done:
			if r.Err != nil {
				return fmt.Errorf("perf: connect: %w", r.Err)
			}
		case <-timer.C:
			return errors.New("perf: iWARP connection setup timed out")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for i := range cli.qps {
		ck, sk := cli.iwKey(i), srv.iwKey(i)
		cli.qps[i].peer, srv.qps[i].peer = sk, ck
		res.Client, res.Server = append(res.Client, ck), append(res.Server, sk)
	}
	return nil
}
