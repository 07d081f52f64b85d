// perf over iWARP: iWARP devices on kernel TCP between the server's and
// the client's addresses (in the TAP mode on the NICs' own TCP, over their
// TAPs), each QP pair connected through the iWARP connection manager (MPA
// Request and Reply, RTR). The loops, statistics, data check and report
// are the RoCE test's; the raw figure is kernel TCP's between the same
// addresses in the same run (rawtcp.go). This file runs both sides in one
// process and holds what the roles share; iwarp_server.go and
// iwarp_client.go are the two roles of a two-process test.
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
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream"
)

// IWARPMSS is the MSS the iWARP engines size their FPDUs for: Linux
// loopback's (65483), which makes every FPDU as large as MPA allows.
const IWARPMSS = 65483

// iwSide is the iWARP engine of a side (its device, as a local ibv
// device, is side.dev).
type iwSide struct {
	stack *iwarp.Stack
	mss   int         // the MSS its FPDUs are sized for
	ended chan uint32 // QPs whose connection ended
}

// checkIWARP refuses what an iWARP run cannot use: on kernel TCP there
// is no link to give and nothing of the NIC's to capture.
func (c *Config) checkIWARP() error {
	if c.TAP == nil && c.ServerTAP == nil && (c.Link != nil || c.ServerLink != nil || c.Pcap != nil) {
		return fmt.Errorf("%w: --iwarp runs on kernel TCP: no link, no pcap (the TAP mode captures)", ErrConfig)
	}
	return nil
}

// runIWARP runs r's role over iWARP.
func runIWARP(ctx context.Context, r *resolved) (*Result, error) {
	switch r.role {
	case roleServer:
		return runIWARPServer(ctx, r)
	case roleClient:
		return runIWARPClient(ctx, r)
	}
	return runIWARPBoth(ctx, r)
}

// runIWARPBoth runs both sides in this process.
func runIWARPBoth(ctx context.Context, r *resolved) (*Result, error) {
	nets, err := openIWARPNets(r)
	if err != nil {
		return nil, err
	}
	defer nets.close()
	srv, err := openIWARPSide(r, r.server, "rnic0", serverSeed, nets.srv, nets.mss)
	if err != nil {
		return nil, err
	}
	defer srv.closeIWARP()
	cli, err := openIWARPSide(r, r.Addr, "rnic1", clientSeed, nets.cli, nets.mss)
	if err != nil {
		return nil, err
	}
	defer cli.closeIWARP()
	res := newResult(r)
	res.IWARP, res.MTU = true, nets.mss
	if err := connectIWARP(ctx, srv, cli, res); err != nil {
		return nil, err
	}
	// Receives go up before the client may send.
	posted, err := srv.postServerRecvs(r)
	if err != nil {
		return nil, err
	}
	if err := cli.postClientRecvs(r); err != nil {
		return nil, err
	}
	if r.Op == OpSend && r.Mode == ModeBW {
		// Credit: the receives the server has posted on QP i.
		reposted := make([]atomic.Int64, len(srv.qps))
		srv.onRecv = func(i int) error { reposted[i].Add(1); return nil }
		cli.sendCredit = func(i int) int { return posted[i] + int(reposted[i].Load()) }
	}
	loop := srv.startServerLoop(ctx, r, slices.Clone(posted))
	if err := cli.measure(ctx, r, res); err != nil {
		loop.stop()
		return nil, err
	}
	if err := loop.wait(); err != nil {
		return nil, fmt.Errorf("perf: server: %w", err)
	}
	if r.clientChecks() {
		res.Check = cli.awaitTargets(ctx, serverSeed)
	} else {
		res.Check = srv.awaitTargets(ctx, clientSeed)
	}
	disconnectIWARP(cli, srv)
	switch {
	case r.TAP != nil:
		res.RawSkipped = "TAP mode"
	case !r.NoRaw:
		rawTCP(ctx, r, res)
	}
	return res, nil
}

// iwarpNets are the two sides' streams in one process, and the FPDU size.
type iwarpNets struct {
	srv, cli stream.Network
	mss      int
	close    func()
}

// openIWARPNets opens the streams: kernel TCP, or in the TAP mode each
// NIC's own TCP on its TAP (the pcap then holds the real frames).
func openIWARPNets(r *resolved) (*iwarpNets, error) {
	n := &iwarpNets{srv: &stream.TCP{}, cli: &stream.TCP{}, mss: IWARPMSS, close: func() {}}
	if r.TAP == nil {
		return n, nil
	}
	// FPDUs sized for one TCP segment on the TAPs' Ethernet.
	n.mss = min(tapMSS(r.TAP.MTU, r.server), tapMSS(r.ServerTAP.MTU, r.server))
	sh, err := openHost(r, hostSpec{name: "rnic0", tap: r.ServerTAP, trace: r.Trace})
	if err != nil {
		return nil, err
	}
	ch, err := openHost(r, hostSpec{name: "rnic1", tap: r.TAP, pcap: r.Pcap, trace: r.Trace})
	if err != nil {
		sh.Close()
		return nil, err
	}
	n.srv, n.cli = sh.Streams(), ch.Streams()
	n.close = func() {
		ch.Close()
		sh.Close()
	}
	return n, nil
}

// landTimeout bounds the wait of the data check for data in flight.
const landTimeout = 5 * time.Second

// awaitTargets is the data check of the side whose targets receive the
// data. An iWARP WRITE or SEND completes before it has landed: it waits
// (for a while) until the targets hold what the peer, with peerSeed,
// sent.
func (s *side) awaitTargets(ctx context.Context, peerSeed byte) Check {
	deadline := time.Now().Add(landTimeout)
	for {
		c := s.checkTargets(peerSeed, s.cfg.Iters)
		if c.OK() || time.Now().After(deadline) || ctx.Err() != nil {
			return c
		}
		time.Sleep(time.Millisecond)
	}
}

// tcpOptionsLen is the room for TCP options the NICs' TCP (gVisor's, with
// timestamps and SACK on) keeps in every segment, the most options may
// take (RFC 9293 §3.1): its data segments carry the MSS less 40 bytes
// (1420 on a 1500-byte IPv4 TAP, as captures show).
const tcpOptionsLen = 40

// tapMSS is the payload of a TCP segment on a TAP of Ethernet MTU eth
// (1500 if zero) towards peer: the FPDUs are sized for it, so that each
// one starts a segment (RFC 5044 §4.5), as captures show them.
func tapMSS(eth int, peer netip.Addr) int {
	eth = cmp.Or(eth, 1500)
	if peer.Unmap().Is4() {
		return eth - 40 - tcpOptionsLen // IPv4 + TCP headers
	}
	return eth - 60 - tcpOptionsLen
}

// openIWARPSide opens an iWARP device on addr and creates the objects of
// openSide: one buffer with a source and a target region per QP, the CQs,
// the QPs in INIT.
func openIWARPSide(r *resolved, addr netip.Addr, name string, seed byte, network stream.Network, mss int) (s *side, err error) {
	s = &side{name: name, cfg: r, byQP: map[uint32]int{}, seed: seed, iw: &iwSide{mss: mss}}
	defer func() {
		if err != nil {
			s.closeIWARP()
		}
	}()
	s.iw.ended = make(chan uint32, r.QPs)
	scfg := iwarp.Config{Clock: clock.NewReal(), Network: network, Addr: addr, MSS: mss,
		OnConnEvent: func(e iwarp.ConnEvent) {
			if e.Type == iwarp.EventDisconnected {
				select {
				case s.iw.ended <- e.QPN:
				default:
				}
			}
		}}
	if r.RDMACM {
		// As siw under rdma_cm (captures/siw-*.pcap): no CRC asked for
		// (a peer that asks gets them) and no peer-to-peer RTR offered.
		scfg.NoCRC, scfg.RTR = true, iwarp.RTRNone
	}
	if r.Trace != nil {
		var mu sync.Mutex
		tw := r.Trace
		scfg.Trace = func(e iwarp.TraceEvent) { mu.Lock(); fmt.Fprintf(tw, "%s %v\n", name, e); mu.Unlock() }
	}
	if s.iw.stack, err = iwarp.NewStack(scfg); err != nil {
		return s, err
	}
	dev, err := nic.Open(nic.Config{Name: name, GIDs: []netip.Addr{addr}, Provider: s.iw.stack})
	if err != nil {
		return s, fmt.Errorf("perf: open iWARP device on %v: %w", addr, err)
	}
	s.dev = ibv.Local(dev, ibv.LocalOptions{})
	d := s.dev
	if err := r.checkLimits(limitsOf("device "+name, d.Query())); err != nil {
		return s, err
	}
	reg := region(r.Size)
	if s.mem, err = newBuffer(d, 2*reg*r.QPs); err != nil {
		return s, fmt.Errorf("perf: allocate %d bytes: %w", 2*reg*r.QPs, err)
	}
	if s.pd, err = d.AllocPD(); err != nil {
		return s, fmt.Errorf("perf: alloc PD: %w", err)
	}
	access := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	if s.mr, err = d.RegMR(s.pd, s.mem.b, access); err != nil {
		return s, fmt.Errorf("perf: register %d bytes: %w", len(s.mem.b), err)
	}
	if err = s.openWatch(); err != nil {
		return s, err
	}
	if s.scq, err = d.CreateCQ(r.sendCQE()); err != nil {
		return s, fmt.Errorf("perf: create send CQ: %w", err)
	}
	if s.rcq, err = d.CreateCQ(r.recvCQE()); err != nil {
		return s, fmt.Errorf("perf: create receive CQ: %w", err)
	}
	caps := verbs.QPCap{MaxSendWR: uint32(r.TxDepth), MaxRecvWR: uint32(r.recvDepth()), MaxSendSGE: 1, MaxRecvSGE: 1}
	for i := 0; i < r.QPs; i++ {
		qp, err := d.CreateQP(s.pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: s.scq, RecvCQ: s.rcq, Cap: caps})
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

// disconnectWait bounds the wait for the peers' FINs after an orderly
// disconnect.
const disconnectWait = 2 * time.Second

// disconnectIWARP ends the QPs' connections of every side in order, as a
// test that went well ends: each QP's stream is closed after what it
// queued (a FIN, not the reset of closeIWARP), and it waits, for a while,
// until each peer has closed too. Both sides of one process disconnect
// before either waits, so that neither sees its peer vanish.
func disconnectIWARP(sides ...*side) {
	for _, s := range sides {
		for _, q := range s.qps {
			s.iw.stack.Disconnect(q.qp.QPN()) // (a connection already ended has its event)
		}
	}
	timer := time.NewTimer(disconnectWait)
	defer timer.Stop()
	for _, s := range sides {
		for range s.qps {
			select {
			case <-s.iw.ended:
			case <-timer.C:
				return
			}
		}
	}
}

// closeIWARP closes the connections (resetting those still open),
// destroys everything and closes the device.
func (s *side) closeIWARP() {
	if s.iw.stack != nil {
		s.iw.stack.Close()
	}
	d := s.dev
	if d == nil {
		return
	}
	for _, q := range s.qps {
		q.qp.Destroy()
	}
	for _, cq := range []ibv.CQ{s.scq, s.rcq} {
		if cq != nil {
			cq.Destroy()
		}
	}
	if s.mr != nil {
		s.mr.Dereg()
	}
	s.closeWatch()
	if s.mem != nil {
		s.mem.close()
	}
	if s.pd != nil {
		s.pd.Dealloc()
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
	if a := s.dev.GIDs(); len(a) > 0 {
		k.GID = a[0].As16()
	}
	return k
}

// connectIWARP connects the client's QPs to the server's through the
// connection manager (iwarp_connect.go), the server listening on an
// ephemeral port of its address, and fills in the keys.
func connectIWARP(ctx context.Context, srv, cli *side, res *Result) error {
	l, accepted, err := srv.listenIWARP(netip.AddrPortFrom(srv.dev.GIDs()[0].Unmap(), 0))
	if err != nil {
		return err
	}
	defer l.Close()
	// Either side failing stops the other's wait.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srvErr := make(chan error, 1)
	go func() {
		err := waitAccepted(cctx, accepted, len(srv.qps))
		if err != nil {
			cancel()
		}
		srvErr <- err
	}()
	err = cli.connectQPs(cctx, l.Addr())
	if err != nil {
		cancel()
	}
	if serr := <-srvErr; serr != nil && (err == nil || errors.Is(err, context.Canceled)) && !errors.Is(serr, context.Canceled) {
		err = serr
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	for i := range cli.qps {
		ck, sk := cli.iwKey(i), srv.iwKey(i)
		cli.qps[i].peer, srv.qps[i].peer = sk, ck
		res.Client, res.Server = append(res.Client, ck), append(res.Server, sk)
	}
	return nil
}
