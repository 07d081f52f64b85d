// One side's verbs objects: a device, a PD, one buffer with two regions
// per QP under one MR, a send CQ and a receive CQ shared by all QPs (as
// perftest shares them), and the RC QPs. The device is an ibv.Device,
// whatever the backend (over iWARP the side's own iWARP NIC, from
// embedded.OpenIWARP).
//
// Each QP's memory is a source region, whose bytes the side's own SENDs,
// WRITEs and READ responses carry, and a target region, where the peer's
// WRITEs, SENDs and atomics land and where this side's READs put what they
// fetch. Keeping them apart is what lets a latency test watch its target
// while it writes from its source, and lets each side check what arrived
// against what the other sent.

package perf

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// region is the size of one region for messages of size bytes: a whole
// number of 64-byte lines, so every region (and its atomic word) is
// aligned, and at least perftest's cycle buffer: a perftest client
// sending messages of up to half of it moves its remote address on by
// each message (rounded to the cache line) and wraps at the cycle
// buffer's end, so a smaller target would take its later messages
// outside the MR.
func region(size int) int { return max(cycleBuffer, (size+63)&^63) }

// qpSide is one QP and its memory.
type qpSide struct {
	qp   ibv.QP
	psn  uint32
	src  []byte // the source region
	dst  []byte // the target region
	sva  uint64 // MR addresses of src and dst
	dva  uint64
	peer Key    // the peer QP's key
	ah   ibv.AH // UD: the address of the peer's QP
	// mw and mwKey: with --mw, the window over src and dst and its rkey,
	// which key hands out instead of the MR's (mw.go).
	mw    ibv.MW
	mwKey uint32
}

// UD constants, perftest's: every QP's Q_Key (DEF_QKEY), and the 40 bytes
// of GRH a UD receive gets in front of the message (UD_ADDITION).
const (
	udQKey = 0x11111111
	udGRH  = 40
)

// side is one NIC and its objects.
type side struct {
	name string
	cfg  *resolved
	dev  ibv.Device
	gid  int // the GID index the QPs send from
	pd   ibv.PD
	mem  *buffer
	mr   ibv.MR
	scq  ibv.CQ
	rcq  ibv.CQ
	qps  []*qpSide
	byQP map[uint32]int // QPN → index in qps
	// outReads is the READs and atomics a QP takes in and has in flight
	// (its max_dest_rd_atomic and the cap of its max_rd_atomic):
	// perftest's 128, less when the QPs' responder resources together
	// would exceed the device's max_res_rd_atom.
	outReads int
	// seed tells this side's data pattern from the peer's.
	seed byte
	// recvFirst and recvLast: when receiveAll first and last found
	// messages.
	recvFirst, recvLast time.Time
	// serverFirst: in a WRITE latency test the server writes first, as
	// perftest's write_lat does (rnic's client otherwise does: the rnic
	// peers keep one sample per iteration).
	serverFirst bool
	// latPosts: when serveLat posted, from its start.
	latPosts []int64
	// watch is a WRITE latency test's memory watch (spin.go); nil in
	// other tests.
	watch *memWatch
	// lat is the latency loops' reused state (lat.go).
	lat latState
	// iWARP only (iwarp.go): the iWARP NIC and connections; sendCredit,
	// if set, bounds the SENDs posted on QP i (the receives the peer has
	// posted: an iWARP SEND completes before it arrives, and one that
	// finds no receive ends the connection); onRecv is told of each
	// receive reposted on QP i (an error ends the receiving).
	iw         *iwSide
	sendCredit func(i int) int
	onRecv     func(i int) error
	// recvDone, if set, is told of each receive completed on QP i, with
	// the count so far (perftest's credits in rdma_cm mode, cm_credit.go).
	recvDone func(i, n int) error
}

// sideSpec is what openSide needs besides the test parameters.
type sideSpec struct {
	name string
	seed byte
}

// openSide creates every object on the device n, whose QPs send from the
// GID of addr; on failure all is released. The device stays its opener's
// to close.
func openSide(r *resolved, n ibv.Device, addr netip.Addr, spec sideSpec) (_ *side, err error) {
	// s is not the result: a failure returns nil, and the deferred close
	// must still see what was created.
	// A server learns the test from its client: the device's limits are
	// checked here, before anything is created.
	if err := r.checkLimits(limitsOf("device "+n.Name(), n.Query())); err != nil {
		return nil, err
	}
	s := &side{name: spec.name, cfg: r, dev: n, byQP: map[uint32]int{}, seed: spec.seed,
		outReads: fitOutReads(n.Query(), r.QPs)}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.gid, err = n.GIDIndex(addr); err != nil {
		return nil, err
	}
	if r.HasGIDIndex {
		// perftest's -x: the GID must be there, and be an address's.
		gids := n.GIDs()
		if r.GIDIndex < 0 || r.GIDIndex >= len(gids) || !gids[r.GIDIndex].IsValid() || gids[r.GIDIndex].IsUnspecified() {
			return nil, fmt.Errorf("%w: GID index %d: the NIC's GID table is %v", ErrConfig, r.GIDIndex, gids)
		}
		s.gid = r.GIDIndex
	}
	grh := 0
	if r.UD {
		grh = udGRH // a UD receive's GRH goes in front of the message
	}
	reg := region(r.Size + grh)
	if s.mem, err = newBuffer(n, 2*reg*r.QPs); err != nil {
		return nil, fmt.Errorf("perf: allocate %d bytes: %w", 2*reg*r.QPs, err)
	}
	if s.pd, err = n.AllocPD(); err != nil {
		return nil, fmt.Errorf("perf: alloc PD: %w", err)
	}
	access := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	if r.MW {
		if _, err = s.windowAllocator(); err != nil {
			return nil, err
		}
		access |= memory.MWBind
	}
	if s.mr, err = n.RegMR(s.pd, s.mem.b, access); err != nil {
		return nil, fmt.Errorf("perf: register %d bytes: %w", len(s.mem.b), err)
	}
	if err = s.openWatch(); err != nil {
		return nil, err
	}
	if s.scq, err = n.CreateCQ(r.sendCQE()); err != nil {
		return nil, fmt.Errorf("perf: create send CQ: %w", err)
	}
	if s.rcq, err = n.CreateCQ(r.recvCQE()); err != nil {
		return nil, fmt.Errorf("perf: create receive CQ: %w", err)
	}
	if err = s.createQPs(reg, grh); err != nil {
		return nil, err
	}
	return s, nil
}

// createQPs creates the QPs in INIT, each with its source and target
// region (of reg bytes, a UD target with grh bytes of room in front) and
// its source filled with the side's pattern.
func (s *side) createQPs(reg, grh int) error {
	r, n := s.cfg, s.dev
	pat := &patterns{seed: s.seed}
	caps := verbs.QPCap{MaxSendWR: uint32(r.TxDepth), MaxRecvWR: uint32(r.recvDepth()), MaxSendSGE: 1, MaxRecvSGE: 1}
	for i := 0; i < r.QPs; i++ {
		typ := verbs.QPTypeRC
		if r.UD {
			typ = verbs.QPTypeUD
		}
		qp, err := n.CreateQP(s.pd, ibv.QPInit{Type: typ, SendCQ: s.scq, RecvCQ: s.rcq, Cap: caps})
		if err != nil {
			return fmt.Errorf("perf: create QP %d: %w", i, err)
		}
		off := 2 * reg * i
		q := &qpSide{qp: qp, psn: rand.Uint32() & 0xFFFFFF,
			src: s.mem.b[off : off+r.Size], dst: s.mem.b[off+reg+grh : off+reg+grh+r.Size],
			sva: s.mr.Addr() + uint64(off), dva: s.mr.Addr() + uint64(off+reg)}
		s.qps = append(s.qps, q)
		s.byQP[qp.QPN()] = i
		init := verbs.QPAttr{State: verbs.QPSInit, PortNum: 1,
			AccessFlags: memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic}
		mask := verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags
		if r.UD {
			init.AccessFlags, init.QKey = 0, udQKey
			mask = verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrQKey
		}
		if err := qp.Modify(&init, mask); err != nil {
			return fmt.Errorf("perf: QP %d to INIT: %w", i, err)
		}
		pat.fill(q.src, i)
	}
	return nil
}

// close destroys everything; the NIC stays open unless it is an iWARP
// side's own.
func (s *side) close() {
	for _, q := range s.qps {
		q.qp.Destroy()
		if q.ah != nil {
			q.ah.Destroy()
		}
	}
	for _, cq := range []ibv.CQ{s.scq, s.rcq} {
		if cq != nil {
			cq.Destroy()
		}
	}
	s.closeWindows()
	if s.mr != nil {
		s.mr.Dereg()
	}
	if s.mem != nil {
		s.mem.close()
	}
	if s.pd != nil {
		s.pd.Dealloc()
	}
	s.closeWatch()
	if s.iw != nil {
		s.iw.dev.Close() // (resetting the connections still open)
	}
}

// mtuFigure is the MTU a result reports: the path MTU's bytes, or over
// iWARP the MSS the FPDUs are sized for.
func (s *side) mtuFigure() int {
	if s.iw != nil {
		return s.iw.mss
	}
	return s.cfg.mtu.Bytes()
}

// key is QP i's key message: its QPN and PSN, the rkey, and the address
// the peer's operations target — the source region for a READ, the target
// region otherwise.
//
// Over iWARP a QP has no PSN (MPA starts the stream), and the key offers
// every READ whatever the test.
func (s *side) key(i int) Key {
	q := s.qps[i]
	k := Key{OutReads: uint16(s.outReads), QPN: q.qp.QPN(), PSN: q.psn, RKey: s.mr.RKey(), VAddr: q.dva}
	if q.mwKey != 0 {
		k.RKey = q.mwKey
	}
	switch {
	case s.iw != nil:
		k.PSN = 0
	case s.cfg.Op == OpWrite, s.cfg.Op == OpSend:
		k.OutReads = 1 // as perftest, which counts READs only where they are made
	}
	if s.cfg.Op == OpRead {
		k.VAddr = q.sva
	}
	if g, err := s.dev.QueryGID(1, s.gid); err == nil {
		k.GID = g.As16()
	}
	return k
}

// xchgKeys trades every QP's key with the peer over ch and connects each
// QP to the peer's; it returns this side's keys and the peer's.
func (s *side) xchgKeys(ch *channel) (own, peers []Key, err error) {
	own = make([]Key, len(s.qps))
	for i := range own {
		own[i] = s.key(i)
	}
	if peers, err = ch.xchgKeys(own); err != nil {
		return nil, nil, err
	}
	for i, peer := range peers {
		if err := s.connect(i, peer); err != nil {
			return nil, nil, err
		}
	}
	return own, peers, nil
}

// connect takes QP i to RTR and RTS towards the peer's key, with
// perftest's attributes (min_rnr_timer 12, timeout 14, retry 7, RNR retry
// 7) and as many outstanding READs and atomics as both sides allow.
func (s *side) connect(i int, peer Key) error {
	q := s.qps[i]
	q.peer = peer
	if s.cfg.UD {
		return s.connectUD(i, peer)
	}
	rd := uint8(min(int(peer.OutReads), s.outReads))
	if rd == 0 {
		rd = 1
	}
	rtr := verbs.QPAttr{State: verbs.QPSRTR, PathMTU: s.cfg.mtu, DestQPN: peer.QPN, RQPSN: peer.PSN,
		MaxDestRdAtomic: uint8(s.outReads), MinRNRTimer: 12,
		AV: verbs.AddressVector{DGID: netip.AddrFrom16(peer.GID), HopLimit: 64, PortNum: 1, SGIDIndex: uint8(s.gid)}}
	if err := q.qp.Modify(&rtr, verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|
		verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer); err != nil {
		return fmt.Errorf("perf: QP %d to RTR: %w", i, err)
	}
	rts := verbs.QPAttr{State: verbs.QPSRTS, SQPSN: q.psn, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: rd}
	if err := q.qp.Modify(&rts, verbs.AttrState|verbs.AttrSQPSN|verbs.AttrTimeout|verbs.AttrRetryCnt|
		verbs.AttrRNRRetry|verbs.AttrMaxQPRdAtomic); err != nil {
		return fmt.Errorf("perf: QP %d to RTS: %w", i, err)
	}
	return nil
}

// connectUD takes UD QP i to RTR and RTS, and makes the address handle
// of the peer's QP, as perftest's UD tests: a UD QP has no peer of its
// own, each SEND names one.
func (s *side) connectUD(i int, peer Key) error {
	q := s.qps[i]
	rtr := verbs.QPAttr{State: verbs.QPSRTR}
	if err := q.qp.Modify(&rtr, verbs.AttrState); err != nil {
		return fmt.Errorf("perf: UD QP %d to RTR: %w", i, err)
	}
	rts := verbs.QPAttr{State: verbs.QPSRTS, SQPSN: q.psn}
	if err := q.qp.Modify(&rts, verbs.AttrState|verbs.AttrSQPSN); err != nil {
		return fmt.Errorf("perf: UD QP %d to RTS: %w", i, err)
	}
	ah, err := s.dev.CreateAH(s.pd, verbs.AddressVector{DGID: netip.AddrFrom16(peer.GID), HopLimit: 64,
		PortNum: 1, SGIDIndex: uint8(s.gid)})
	if err != nil {
		return fmt.Errorf("perf: UD QP %d: address handle: %w", i, err)
	}
	q.ah = ah
	return nil
}

// postRecv posts n receives into QP i's target region (UD: with the GRH's
// room in front).
func (s *side) postRecv(i, n int) error {
	q := s.qps[i]
	sge := verbs.SGE{Addr: q.dva, Length: uint32(len(q.dst)), LKey: s.mr.LKey()}
	if s.cfg.UD {
		sge.Length += udGRH
	}
	wr := verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{sge}}
	for k := 0; k < n; k++ {
		if err := q.qp.PostRecv(&wr); err != nil {
			return fmt.Errorf("perf: post receive on QP %d: %w", i, err)
		}
	}
	return nil
}

// wrID packs a QP index and a per-QP sequence number into a WR ID, so a
// completion names both.
func wrID(qp, seq int) uint64 { return uint64(qp)<<32 | uint64(uint32(seq)) }

func splitWRID(id uint64) (qp, seq int) { return int(id >> 32), int(uint32(id)) }

// sendWR builds the operation's WR number seq on QP i: a message from the
// source region to the peer's target (WRITE, SEND), from the peer's
// source into the target region (READ), or an atomic on the peer's target
// word whose original value lands in the target region. CMP_AND_SWAP
// swaps seq for seq+1, FETCH_AND_ADD adds 1, so after n operations in
// order the word holds n either way: the check that they all happened.
func (s *side) sendWR(i, seq int, signaled bool) verbs.SendWR {
	var wr verbs.SendWR
	s.fillWR(&wr, make([]verbs.SGE, 1), i, seq, signaled)
	return wr
}

// fillWR sets wr to operation seq on QP i, its one SGE in sge (which the
// caller provides, so that a loop posting one WR at a time reuses both).
func (s *side) fillWR(wr *verbs.SendWR, sge []verbs.SGE, i, seq int, signaled bool) {
	q := s.qps[i]
	lkey := s.mr.LKey()
	*wr = verbs.SendWR{ID: wrID(i, seq), RemoteAddr: q.peer.VAddr, RKey: q.peer.RKey, SGL: sge[:1]}
	if signaled {
		wr.Flags = verbs.SendSignaled
	}
	switch s.cfg.Op {
	case OpWrite:
		wr.Opcode = verbs.WRRDMAWrite
		wr.SGL[0] = verbs.SGE{Addr: q.sva, Length: uint32(len(q.src)), LKey: lkey}
	case OpSend:
		wr.Opcode = verbs.WRSend
		wr.SGL[0] = verbs.SGE{Addr: q.sva, Length: uint32(len(q.src)), LKey: lkey}
		if q.ah != nil {
			wr.AH, wr.RemoteQPN, wr.RemoteQKey = q.ah.AV(), q.peer.QPN, udQKey
		}
	case OpRead:
		wr.Opcode = verbs.WRRDMARead
		wr.SGL[0] = verbs.SGE{Addr: q.dva, Length: uint32(len(q.dst)), LKey: lkey}
	case OpAtomic:
		wr.SGL[0] = verbs.SGE{Addr: q.dva, Length: atomicSize, LKey: lkey}
		if s.cfg.AtomicType == CmpAndSwap {
			wr.Opcode, wr.CompareAdd, wr.Swap = verbs.WRAtomicCmpSwp, uint64(seq), uint64(seq)+1
		} else {
			wr.Opcode, wr.CompareAdd = verbs.WRAtomicFetchAdd, 1
		}
	}
}
