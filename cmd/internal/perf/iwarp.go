// perf over iWARP: each side an iWARP NIC (embedded.OpenIWARP) on kernel
// TCP between the server's and the client's addresses (in the TAP mode on
// the NICs' own TCP, over their TAPs), each QP pair connected through the
// NIC's connection manager (ibv.ConnManager: MPA Request and Reply, RTR).
// The roles, loops, statistics, data check and report are the RoCE
// test's (run.go); the side channel's exchange is rnic's own
// (iwarp_server.go, iwarp_client.go); the raw figure is kernel TCP's
// between the same addresses in the same run (rawtcp.go). This file holds
// what the iWARP sides share.
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
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
)

// IWARPMSS is the MSS the iWARP engines size their FPDUs for: Linux
// loopback's (65483), which makes every FPDU as large as MPA allows.
const IWARPMSS = 65483

// iwSide is what an iWARP side has besides the RoCE side's objects.
type iwSide struct {
	dev ibv.Device // the iWARP NIC, which the side owns
	mss int        // the MSS its FPDUs are sized for

	mu    sync.Mutex
	conns []ibv.CMConn // the QPs' connections (not in rdma_cm mode)
}

// checkIWARP refuses what an iWARP run cannot use: on kernel TCP there
// is no link to give and nothing of the NIC's to capture.
func (c *Config) checkIWARP() error {
	if c.TAP == nil && c.ServerTAP == nil && (c.Link != nil || c.ServerLink != nil || c.Pcap != nil) {
		return fmt.Errorf("%w: --iwarp runs on kernel TCP: no link, no pcap (the TAP mode captures)", ErrConfig)
	}
	return nil
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

// landedCheck is the data check of the side whose targets receive the
// data from the peer with peerSeed: over iWARP once it has landed.
func (s *side) landedCheck(ctx context.Context, peerSeed byte) Check {
	if s.iw != nil {
		return s.awaitTargets(ctx, peerSeed)
	}
	return s.checkTargets(peerSeed, s.cfg.Iters)
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

// openIWARPSide opens an iWARP NIC on addr, its streams h's, and creates
// the objects of openSide on it. In rdma_cm mode the NIC speaks as siw
// under rdma_cm (testdata/captures/siw-*.pcap): no CRC asked for (a peer
// that asks gets them) and no peer-to-peer RTR offered.
func openIWARPSide(r *resolved, h *host, addr netip.Addr, spec sideSpec, mss int) (*side, error) {
	cfg := embedded.IWARPConfig{Name: spec.name, Addr: addr, Network: h.Streams(), MSS: mss,
		CRC: !r.RDMACM, Trace: r.Trace}
	if r.RDMACM {
		cfg.RTR = embedded.RTRNone
	}
	n, err := embedded.OpenIWARP(cfg)
	if err != nil {
		return nil, fmt.Errorf("perf: open iWARP device on %v: %w", addr, err)
	}
	dev := n.Verbs(nic.IBVOptions{})
	s, err := openSide(r, dev, addr, spec)
	if err != nil {
		dev.Close()
		return nil, err
	}
	s.iw = &iwSide{dev: dev, mss: mss}
	return s, nil
}

// disconnectWait bounds the wait for the peers' FINs after an orderly
// disconnect.
const disconnectWait = 2 * time.Second

// disconnectIWARP ends the QPs' connections in order, as a test that went
// well ends: each QP's stream is closed after what it queued (a FIN, not
// the reset of closing the NIC), and it waits, for a while, until each
// peer has closed too. Every connection closes before any waits, so that
// no peer sees its other end vanish.
func (s *side) disconnectIWARP() {
	s.iw.mu.Lock()
	conns := s.iw.conns
	s.iw.conns = nil
	s.iw.mu.Unlock()
	disconnectAll(conns)
}

// disconnectAll disconnects every connection at once, waiting (at most
// disconnectWait) until all have ended.
func disconnectAll(conns []ibv.CMConn) {
	ctx, cancel := context.WithTimeout(context.Background(), disconnectWait)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Disconnect(ctx)
		}()
	}
	wg.Wait()
}

// addConn notes a QP's connection for disconnectIWARP.
func (s *side) addConn(c ibv.CMConn) {
	s.iw.mu.Lock()
	s.iw.conns = append(s.iw.conns, c)
	s.iw.mu.Unlock()
}
