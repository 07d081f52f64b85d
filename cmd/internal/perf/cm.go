// perftest's rdma_cm mode (-R): both connections through the connection
// manager (over RoCEv2 the device's ibv.ConnManager: a local NIC's
// nic/rdmacm, the IB CM's MADs on QP1, service ID 0x01064853 for TCP port
// 18515, or rnicd's or libibverbs' rdma_cm; over iWARP the iWARP CM,
// cm_iwarp.go), the side channel as SENDs on the first (cmchannel.go). The
// order, from testdata/captures/rxe-write-bw-cm-4096.pcap (an rxe client
// and server, perftest 4.5); the siw captures show the same messages over
// MPA:
//
//	client                                      server
//	REQ/REP/RTU: connection 1 (the control QP), 56 zero bytes of private data
//	version   16 bytes "6.06"     ──▶ ◀──       version
//	sys data  be32 × 2            ──▶ ◀──       be32 × 2
//	mtu       4 bytes "3\0\0\0"   ──▶ ◀──       mtu
//	56 zero bytes                 ──▶ ◀──       56 zero bytes
//	REQ/REP/RTU: connection 2 (the data QP)
//	56 zero bytes                 ──▶ ◀──       56 zero bytes
//	record (56 bytes, per QP)     ──▶ ◀──       record
//	hand shakes (records)         ──▶ ◀──       (as over TCP, perftest.go)
//	            ... the test ...
//	hand shake, bw report (be64 × 5), hand shake, as over TCP; no "done"
//	DREQ/DREP on both connections (the two sides' DREQs may cross)
//
// The QPs' PSNs, path and MTU come from the CM, so a record's QPN and
// PSN are informational; its rkey and vaddr are what the peer targets.
// Two rnic sides speak the same (perftest's) exchange: the data check and
// the raw baseline are skipped.

package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/rnic/rnic/nic/ibv"
)

// cmZeroSize is the size of perftest's two all-zero control messages and
// of the REQ's private data.
const cmZeroSize = 56

// skippedCM is Check.Skipped in rdma_cm mode, whose exchange is
// perftest's alone.
const skippedCM = "rdma_cm mode (perftest's exchange)"

// cmSettle is how long a client waits after the control connection
// before its first message (a variable: tests between rnic sides, which
// post their receives first, need no wait).
var cmSettle = time.Second

// cmDisconnectWait bounds a disconnect's wait for the DREP.
const cmDisconnectWait = 5 * time.Second

// runCM runs a test in rdma_cm mode.
func runCM(ctx context.Context, r *resolved) (*Result, error) {
	if r.UD {
		return nil, fmt.Errorf("%w: -R with UD QPs is not supported", ErrConfig)
	}
	switch r.role {
	case roleServer:
		if err := r.testDefaults(); err != nil {
			return nil, err
		}
		if !r.JSON {
			io.WriteString(r.Out, waitBanner)
		}
		return runCMServer(ctx, r)
	case roleClient:
		return runCMClient(ctx, r)
	}
	return runCMBoth(ctx, r)
}

// runCMBoth runs the server on a goroutine and the client here.
func runCMBoth(ctx context.Context, r *resolved) (*Result, error) {
	sr := *r
	sr.role = roleServer
	sr.Addr, sr.Link, sr.TAP, sr.ServerTAP, sr.anyAddr = r.server, r.ServerLink, r.ServerTAP, nil, false
	sr.Pcap, sr.Out, sr.Progress, sr.IBDev = nil, io.Discard, io.Discard, ""
	if r.IWARP && r.TAP == nil || !r.IWARP && r.dev != nil {
		// Kernel TCP, or one device's CM for both sides: a free port, not
		// perftest's, which another run on the host or device may hold.
		sr.Port = 0
	}
	cr := *r
	cr.role = roleClient
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	srvErr := make(chan error, 1)
	ready := make(chan struct{})
	sr.cmReady = ready
	go func() {
		_, err := runCMServer(sctx, &sr)
		srvErr <- err
	}()
	select {
	case <-ready:
		if sr.cmListenPort != 0 {
			cr.Port = sr.cmListenPort
		}
	case err := <-srvErr:
		return nil, fmt.Errorf("perf: server: %w", err)
	}
	res, err := runCMClient(ctx, &cr)
	if err != nil {
		scancel()
	}
	serr := <-srvErr
	if serr != nil && err == nil {
		err = fmt.Errorf("perf: server: %w", serr)
	}
	return res, err
}

// cmLink is a side's connection manager: rdma_cm over RoCEv2, or the
// iWARP CM.
type cmLink interface {
	// connect connects qp to the server (the client); data says whether
	// it is a data QP, whose IRD/ORD a READ or atomic test raises.
	connect(ctx context.Context, qp ibv.QP, data bool) error
	// accept accepts the next connection request on qp (the server).
	accept(ctx context.Context, qp ibv.QP, data bool) error
	// disconnect ends every connection in order.
	disconnect()
	// peerClosed reports whether the peer has disconnected the control
	// connection, waiting a moment for news of it in flight.
	peerClosed() bool
}

// cmIRDORD is the IRD and ORD of a connection: perftest's out_reads on a
// READ or atomic test's data QPs, none otherwise.
func cmIRDORD(r *resolved, data bool) int {
	if data && (r.Op == OpRead || r.Op == OpAtomic) {
		return maxOutReads
	}
	return 0
}

// cmParam is the rdma_cm parameters of a connection: retry and RNR retry
// 7. (rdmacm takes IRD/ORD 0 for its default 1: perftest's REQs carry 0.)
func cmParam(r *resolved, data bool) *ibv.ConnParam {
	n := uint8(cmIRDORD(r, data))
	return &ibv.ConnParam{RetryCount: 7, RNRRetryCount: 7, ResponderResources: n, InitiatorDepth: n}
}

// connManager is dev's rdma_cm.
func connManager(r *resolved, dev ibv.Device) (ibv.ConnManager, error) {
	cm, ok := dev.(ibv.ConnManager)
	if !ok {
		return nil, fmt.Errorf("%w: device %s offers no rdma_cm (-R)", ErrConfig, r.spec)
	}
	return cm, nil
}

// cmLocal is the address a side's QPs send from: its own, or the NIC's
// first of the peer's family.
func cmLocal(gids []netip.Addr, own, peer netip.Addr) netip.Addr {
	if own.IsValid() && !own.IsUnspecified() {
		return own
	}
	for _, g := range gids {
		g = g.Unmap()
		if g.IsValid() && !g.IsUnspecified() && g.Is4() == peer.Unmap().Is4() && !g.IsLinkLocalUnicast() {
			return g
		}
	}
	return own
}

// cmConnectRetry is how long a refused connection is tried again: a
// perftest server listens anew for each connection (and the first time
// only once it is up), so a request may find no listener for a moment.
const cmConnectRetry = 10 * time.Second

// retryConnect calls connect until it succeeds, the retry time is over or
// refused says the error is final.
func retryConnect(ctx context.Context, r *resolved, connect func() error, retryable func(error) bool) error {
	wait := cmConnectRetry
	if r.DialRetry < 0 {
		wait = 0
	} else if r.DialRetry > wait {
		wait = r.DialRetry
	}
	deadline := time.Now().Add(wait)
	for {
		err := connect()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !retryable(err) || time.Now().After(deadline) {
			return fmt.Errorf("perf: connect to %v:%d: %w", r.server, r.Port, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// roceLink is rdma_cm over RoCEv2: the device's connection manager.
type roceLink struct {
	r     *resolved
	cm    ibv.ConnManager
	l     ibv.CMListener
	conns []ibv.CMConn
}

func (l *roceLink) connect(ctx context.Context, qp ibv.QP, data bool) error {
	var zero [cmZeroSize]byte
	return retryConnect(ctx, l.r, func() error {
		c, err := l.cm.CMConnect(ctx, qp, l.r.server, uint16(l.r.Port), zero[:], cmParam(l.r, data))
		if err == nil {
			l.conns = append(l.conns, c)
		}
		return err
	}, func(err error) bool {
		// A REJ (no listener yet, on every backend) is worth another try.
		return errors.Is(err, ibv.ErrRejected)
	})
}

func (l *roceLink) accept(ctx context.Context, qp ibv.QP, data bool) error {
	req, err := l.l.Accept(ctx)
	if err != nil {
		return fmt.Errorf("perf: rdma_cm accept: %w", err)
	}
	c, err := req.Accept(ctx, qp, make([]byte, cmZeroSize), cmParam(l.r, data))
	if err != nil {
		return fmt.Errorf("perf: rdma_cm accept: %w", err)
	}
	l.conns = append(l.conns, c)
	return nil
}

func (l *roceLink) peerClosed() bool {
	if len(l.conns) == 0 {
		return false
	}
	// The flush that made the caller ask may be seen before rdma_cm has
	// closed Done for the DREQ that caused it.
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-l.conns[0].Done():
		return true
	case <-t.C:
		return false
	}
}

func (l *roceLink) disconnect() {
	if l.l == nil && !l.r.endHandShake() && len(l.conns) > 0 {
		// A latency test ends with no message: a client done first lets
		// the server, whose last SEND may still be in flight, disconnect
		// first (as the iWARP link does); its own DREQ would flush that
		// SEND ("control QP: send completed with WR_FLUSH_ERR").
		t := time.NewTimer(cmDisconnectWait)
		select {
		case <-l.conns[0].Done():
		case <-t.C:
		}
		t.Stop()
	}
	for _, c := range l.conns {
		ctx, cancel := context.WithTimeout(context.Background(), cmDisconnectWait)
		c.Disconnect(ctx)
		cancel()
	}
	l.conns = nil
}

// runCMClient opens the client's side and runs its steps.
func runCMClient(ctx context.Context, r *resolved) (*Result, error) {
	return runCMSide(ctx, r, sideSpec{name: "rnic1", seed: clientSeed}, cmClient)
}

// runCMServer listens on r.Port (any free port if 0; cmReady then learns
// it), opens the server's side and serves the test of its own flags.
func runCMServer(ctx context.Context, r *resolved) (*Result, error) {
	return runCMSide(ctx, r, sideSpec{name: "rnic0", seed: serverSeed}, cmServer)
}

// cmSteps is a side's sequence of steps in rdma_cm mode.
type cmSteps func(ctx context.Context, r *resolved, s *side, ch *cmChannel, link cmLink) (*Result, error)

// runCMSide opens a side (the server's listens too), its control channel
// and its connection manager, and runs its steps.
func runCMSide(ctx context.Context, r *resolved, spec sideSpec, steps cmSteps) (*Result, error) {
	server := r.role == roleServer
	// A local RoCEv2 NIC gets rdma_cm on its QP1; an iWARP NIC has its own.
	h, err := openHost(r, hostSpec{name: r.nicName(spec.name), tap: r.TAP, addr: r.Addr, link: r.Link, pcap: r.Pcap, trace: r.Trace, cm: !r.IWARP})
	if err != nil {
		return nil, err
	}
	defer h.Close() // a local NIC's CM, then the NIC
	s, err := openCMSide(r, h, spec, server)
	if err != nil {
		return nil, err
	}
	defer s.close()
	cmgr, err := connManager(r, s.dev)
	if err != nil {
		return nil, err
	}
	var l ibv.CMListener
	if server {
		if l, err = cmgr.CMListen(uint16(r.Port)); err != nil {
			return nil, fmt.Errorf("perf: rdma_cm listen on port %d: %w", r.Port, err)
		}
		defer l.Close()
	}
	ch, err := newCMChannel(ctx, s)
	if err != nil {
		return nil, err
	}
	defer ch.close()
	link := newCMLink(r, cmgr, l, !server)
	defer link.disconnect()
	if server && r.cmReady != nil {
		r.cmListenPort = int(l.Port())
		close(r.cmReady)
	}
	return steps(ctx, r, s, ch, link)
}

// openCMSide opens a side for rdma_cm mode on h: its QPs send from its
// address (the NIC's first of the peer's family if it was told none).
func openCMSide(r *resolved, h *host, spec sideSpec, server bool) (*side, error) {
	peer := r.server
	if server {
		peer = netip.IPv4Unspecified()
	}
	if r.IWARP {
		return iwarpCMSide(r, h, spec, peer)
	}
	dev := h.Device()
	return openSide(r, dev, cmLocal(dev.GIDs(), r.Addr, peer), spec)
}

// newCMLink is the connection manager's link for r's transport.
func newCMLink(r *resolved, cm ibv.ConnManager, l ibv.CMListener, client bool) cmLink {
	if r.IWARP {
		return &iwarpLink{r: r, cm: cm, l: l, client: client, ended: make(chan int, r.QPs+1)}
	}
	return &roceLink{r: r, cm: cm, l: l}
}

// device is the side's verbs device.
func (s *side) device() ibv.Device { return s.dev }

// cmKey is QP i's record: its key, naming the credit word in a test with
// credits.
func (s *side) cmKey(ch *cmChannel, i int) Key {
	k := s.key(i)
	if s.cfg.usesCredits() {
		k = ch.creditKey(k, i)
	}
	return k
}

// cmXchgKeys trades the zero message and then every QP's address record
// with the peer (the client writes first), and notes each peer key on its
// QP. It returns this side's records and the peer's, in QP order.
func (s *side) cmXchgKeys(ch *cmChannel, client bool) (own, peers []Key, err error) {
	var zero [cmZeroSize]byte
	if err := ch.exchange(client, zero[:], make([]byte, cmZeroSize)); err != nil {
		return nil, nil, err
	}
	for i := range s.qps {
		k := s.cmKey(ch, i)
		peer, err := ch.xchgRecord(client, k, s.gid)
		if err != nil {
			return nil, nil, err
		}
		s.qps[i].peer = peer
		own, peers = append(own, k), append(peers, peer)
	}
	return own, peers, nil
}

// cmClient is the client's sequence of steps.
func cmClient(ctx context.Context, r *resolved, s *side, ch *cmChannel, link cmLink) (*Result, error) {
	if err := link.connect(ctx, ch.qp, false); err != nil {
		return nil, fmt.Errorf("perf: control QP: %w", err)
	}
	// perftest's client waits a second between the connection and its
	// first message (captures: RTU, then the version 1 s later), and a
	// perftest server may post its first receive only then: siw would
	// take an earlier SEND as one with no receive and stall.
	select {
	case <-time.After(cmSettle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res := newResult(r)
	res.GIDIndex, res.IWARP = s.gid, r.IWARP
	if err := cmPreamble(ch, true, r); err != nil {
		return nil, err
	}
	res.MTU = s.mtuFigure()
	t0 := time.Now()
	for i := range s.qps {
		if err := link.connect(ctx, s.qps[i].qp, true); err != nil {
			return nil, fmt.Errorf("perf: QP %d: %w", i, err)
		}
	}
	keys, peers, err := s.cmXchgKeys(ch, true)
	if err != nil {
		return nil, err
	}
	res.Client, res.Server = keys, peers
	res.ConnectSeconds = time.Since(t0).Seconds()
	s.serverFirst = true
	if r.usesCredits() {
		s.sendCredit = ch.sendCredits(r)
	}
	if err := s.postClientRecvs(r); err != nil {
		return nil, err
	}
	for range r.handShakes() {
		if _, err := ch.xchgRecord(true, s.cmKey(ch, 0), s.gid); err != nil {
			return nil, err
		}
	}
	if err := s.measure(ctx, r, res); err != nil {
		return nil, err
	}
	if r.endHandShake() {
		if _, err := ch.xchgRecord(true, s.cmKey(ch, 0), s.gid); err != nil {
			return nil, err
		}
	}
	if r.tradesReports() {
		if _, err := cmXchgReports(ch, true, clientReport(r, res)); err != nil {
			return nil, err
		}
		if _, err := ch.xchgRecord(true, s.cmKey(ch, 0), s.gid); err != nil {
			return nil, err
		}
	}
	res.Check.Skipped = skippedCM
	res.RawSkipped = "rdma_cm mode"
	return res, nil
}

// cmPreamble trades the versions, the system data and the MTUs (setting
// r.mtu to the smaller), and the first all-zero message.
func cmPreamble(ch *cmChannel, client bool, r *resolved) error {
	out := versionMsg()
	var in [versionSize]byte
	if err := ch.exchange(client, out[:], in[:]); err != nil {
		return err
	}
	if _, _, err := ParseVersion(in[:]); err != nil {
		return err
	}
	for _, v := range []uint32{cycleBuffer, cacheLineSize} {
		out := sysDataMsg(v)
		var in [sysDataSize]byte
		if err := ch.exchange(client, out[:], in[:]); err != nil {
			return err
		}
	}
	// The MTU message: a client sends 4 bytes, as perftest's client
	// does; a server answers with as many as it got.
	mtu := r.mtu
	if mtu == 0 {
		mtu = 3 // iWARP: perftest's 1024 default
	}
	m := [cmMTUSize]byte{'0' + byte(mtu)}
	var mi [cmMTUSize]byte
	ch.loose = true
	if client {
		if err := ch.write(m[:]); err != nil {
			return err
		}
		if err := ch.readFixed(mi[:]); err != nil {
			return err
		}
	} else {
		if err := ch.readFixed(mi[:]); err != nil {
			return err
		}
		if err := ch.write(m[:max(ch.got, mtuMsgSize)]); err != nil {
			return err
		}
	}
	ch.loose = false
	if ch.got < mtuMsgSize {
		return fmt.Errorf("%w: MTU message of %d bytes", ErrPerftestMsg, ch.got)
	}
	peer, err := ParseMTU(mi[:mtuMsgSize])
	if err != nil {
		return err
	}
	if r.mtu != 0 {
		r.mtu = min(r.mtu, peer)
	}
	var zero [cmZeroSize]byte
	return ch.exchange(client, zero[:], make([]byte, cmZeroSize))
}

// finalWrite judges the outcome err of the server's last control SEND.
// The client disconnects as soon as it has read that message, and its
// DREQ may overtake the ACK of the SEND (the client's engine ACKs after
// handing the message up): the server's rdma_cm then moves the QP to ERR
// and the SEND, delivered, completes with WR_FLUSH_ERR. A flush once the
// client has disconnected is therefore the end of the test, not a failure.
func finalWrite(err error, link cmLink) error {
	if errors.Is(err, errSendFlushed) && link.peerClosed() {
		return nil
	}
	return err
}

// cmXchgReports trades bw reports field by field.
func cmXchgReports(ch *cmChannel, client bool, own BWReport) (BWReport, error) {
	out := own.fields()
	var in [reportFields * reportField]byte
	for i := range out {
		if err := ch.exchange(client, out[i][:], in[i*reportField:(i+1)*reportField]); err != nil {
			return BWReport{}, err
		}
	}
	return ParseBWReport(in[:])
}

// cmServer is the server's sequence of steps.
func cmServer(ctx context.Context, r *resolved, s *side, ch *cmChannel, link cmLink) (*Result, error) {
	if err := link.accept(ctx, ch.qp, false); err != nil {
		return nil, err
	}
	if err := cmPreamble(ch, false, r); err != nil {
		return nil, err
	}
	own := newResult(r)
	own.GIDIndex, own.MTU, own.IWARP = s.gid, s.mtuFigure(), r.IWARP
	for i := range s.qps {
		if err := link.accept(ctx, s.qps[i].qp, true); err != nil {
			return nil, fmt.Errorf("perf: QP %d: %w", i, err)
		}
	}
	keys, peers, err := s.cmXchgKeys(ch, false)
	if err != nil {
		return nil, err
	}
	own.Client, own.Server = peers, keys
	s.serverFirst = true
	if r.usesCredits() {
		s.recvDone = ch.creditWriter(s)
	}
	posted, err := s.postServerRecvs(r)
	if err != nil {
		return nil, err
	}
	for range r.handShakes() {
		if _, err := ch.xchgRecord(false, s.cmKey(ch, 0), s.gid); err != nil {
			return nil, err
		}
	}
	loop := s.startServerLoop(ctx, r, posted)
	if r.endHandShake() {
		var hs [cmRecordSize]byte
		if err := ch.readFixed(hs[:]); err != nil {
			loop.stop()
			return nil, err
		}
	}
	if err := loop.wait(); err != nil {
		return nil, err
	}
	if r.endHandShake() {
		k := marshalCMRecord(s.cmKey(ch, 0), s.gid)
		err := ch.write(k[:])
		if !r.tradesReports() { // the server's last message
			err = finalWrite(err, link)
		}
		if err != nil {
			return nil, err
		}
	}
	var peerRep BWReport
	if r.tradesReports() {
		var err error
		if peerRep, err = cmXchgReports(ch, false, BWReport{Size: uint64(r.Size), Iters: uint64(r.Iters)}); err != nil {
			return nil, err
		}
		if _, err := ch.xchgRecord(false, s.cmKey(ch, 0), s.gid); finalWrite(err, link) != nil {
			return nil, err
		}
	}
	own.Check.Skipped = skippedCM
	own.RawSkipped = "rdma_cm mode"
	s.serverFigures(r, own, peerRep)
	return own, nil
}
