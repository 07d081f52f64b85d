// The verbs objects of one side, as rc_pingpong's pp_init_ctx creates
// them: one buffer that every send reads and every receive writes, one MR,
// one CQ for both queues, one RC QP in INIT; and pp_connect_ctx, which
// takes the QP to RTS towards the peer. With UD they are ud_pingpong's:
// the buffer has GRHSpace bytes ahead of the message, receives take the
// whole buffer and sends the message after it, the QP is UD with Q_Key
// UDQKey, and connecting creates the address handle every send names.

package pingpong

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// peer is one side's device and objects.
type peer struct {
	cfg *resolved
	dev ibv.Device
	pd  ibv.PD
	// mem is the buffer's memory, from the device (a backend in another
	// process can only reach memory it gave out).
	mem ibv.Buffer
	buf []byte
	mr  ibv.MR
	cq  ibv.CQ
	qp  ibv.QP
	psn uint32
	// UD: the address handle and QPN every send goes to.
	ah        ibv.AH
	remoteQPN uint32
}

// newPeer opens the device and creates the objects; on failure everything
// created so far is released.
func newPeer(ctx context.Context, r *resolved) (_ *peer, err error) {
	dev, err := openDevice(ctx, r)
	if err != nil {
		return nil, err
	}
	// p is not the result, which is nil on failure: the deferred close
	// needs what was created.
	p := &peer{cfg: r, dev: dev, psn: newPSN()}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if p.mem, err = dev.AllocBuffer(headroom(r) + r.Size); err != nil {
		return nil, fmt.Errorf("pingpong: couldn't allocate the buffer: %w", err)
	}
	p.buf = p.mem.Bytes()
	// rc_pingpong fills the buffer with 0x7b; with Check the client
	// overwrites it with the pattern the receivers verify.
	for i := range p.buf {
		p.buf[i] = 0x7b
	}
	if p.pd, err = dev.AllocPD(); err != nil {
		return nil, fmt.Errorf("pingpong: couldn't allocate PD: %w", err)
	}
	if p.mr, err = dev.RegMR(p.pd, p.buf, memory.LocalWrite); err != nil {
		return nil, fmt.Errorf("pingpong: couldn't register MR: %w", err)
	}
	if p.cq, err = dev.CreateCQ(r.RxDepth + 1); err != nil {
		return nil, fmt.Errorf("pingpong: couldn't create CQ: %w", err)
	}
	caps := verbs.QPCap{MaxSendWR: 1, MaxRecvWR: uint32(r.RxDepth), MaxSendSGE: 1, MaxRecvSGE: 1}
	typ := verbs.QPTypeRC
	if r.UD {
		typ = verbs.QPTypeUD
	}
	if p.qp, err = dev.CreateQP(p.pd, ibv.QPInit{Type: typ, SendCQ: p.cq, RecvCQ: p.cq, Cap: caps}); err != nil {
		return nil, fmt.Errorf("pingpong: couldn't create QP: %w", err)
	}
	init := verbs.QPAttr{State: verbs.QPSInit, PKeyIndex: 0, PortNum: uint8(r.IBPort)}
	mask := verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags
	if r.UD {
		init.QKey = UDQKey
		mask = verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrQKey
	}
	if err = p.qp.Modify(&init, mask); err != nil {
		return nil, fmt.Errorf("pingpong: failed to modify QP to INIT: %w", err)
	}
	return p, nil
}

// headroom is the room ahead of the message in the buffer: GRHSpace for
// UD, none for RC.
func headroom(r *resolved) int {
	if r.UD {
		return GRHSpace
	}
	return 0
}

// message is the part of the buffer a send reads and a receive's payload
// lands in.
func (p *peer) message() []byte { return p.buf[headroom(p.cfg):] }

// close destroys the objects, frees the buffer and closes the device (a
// local NIC with its link or TAP).
func (p *peer) close() {
	if p.qp != nil {
		p.qp.Destroy()
	}
	if p.ah != nil {
		p.ah.Destroy()
	}
	if p.cq != nil {
		p.cq.Destroy()
	}
	if p.mr != nil {
		p.mr.Dereg()
	}
	if p.pd != nil {
		p.pd.Dealloc()
	}
	if p.mem != nil {
		p.mem.Close()
	}
	p.dev.Close()
}

// recvSGE is the whole buffer (for UD the GRH space and the message).
func (p *peer) recvSGE() []verbs.SGE {
	return []verbs.SGE{{Addr: p.mr.Addr(), Length: uint32(len(p.buf)), LKey: p.mr.LKey()}}
}

// sendSGE is the message.
func (p *peer) sendSGE() []verbs.SGE {
	off := headroom(p.cfg)
	return []verbs.SGE{{Addr: p.mr.Addr() + uint64(off), Length: uint32(len(p.buf) - off), LKey: p.mr.LKey()}}
}

// postRecv posts n receives of the whole buffer (pp_post_recv).
func (p *peer) postRecv(n int) error {
	wr := verbs.RecvWR{ID: recvWRID, SGL: p.recvSGE()}
	for i := 0; i < n; i++ {
		if err := p.qp.PostRecv(&wr); err != nil {
			return fmt.Errorf("pingpong: couldn't post receive (%d): %w", i, err)
		}
	}
	return nil
}

// postSend sends the message (pp_post_send), for UD to the peer's QPN
// through the address handle with ud_pingpong's Q_Key.
func (p *peer) postSend() error {
	wr := verbs.SendWR{ID: sendWRID, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: p.sendSGE()}
	if p.ah != nil {
		wr.AH, wr.RemoteQPN, wr.RemoteQKey = p.ah.AV(), p.remoteQPN, UDQKey
	}
	if err := p.qp.PostSend(&wr); err != nil {
		return fmt.Errorf("pingpong: couldn't post send: %w", err)
	}
	return nil
}

// localDest is this side's address message: the QPN, a random 24-bit PSN
// (rc_pingpong's lrand48() & 0xffffff) and the GID at the chosen index, or
// no GID without one.
func (p *peer) localDest() (Dest, error) {
	d := Dest{QPN: p.qp.QPN(), PSN: p.psn}
	if p.cfg.GIDIndex >= 0 {
		g, err := p.dev.QueryGID(uint8(p.cfg.IBPort), p.cfg.GIDIndex)
		if err != nil {
			return Dest{}, fmt.Errorf("pingpong: can't read sgid of index %d: %w", p.cfg.GIDIndex, err)
		}
		d.GID = g.As16()
	}
	return d, nil
}

// newPSN draws a starting PSN.
func newPSN() uint32 { return rand.Uint32() & 0xFFFFFF }

// connect takes the QP to RTR and RTS towards remote with rc_pingpong's
// attributes. When the peer sent a GID (its interface ID non-zero, the test
// rc_pingpong makes) the path has a GRH with hop limit 1, as rc_pingpong
// sets it. Without one rc_pingpong would route by LID, which RoCEv2 does
// not have: rnic then addresses the peer by the address its side channel
// came from, the peer's NIC address in the embedded mode.
//
// The QP sends from the GID at -g's index, or without -g from the GID of
// the address the side channel runs on here (local): the NIC's address in
// the embedded mode, index 0; in the TAP mode the NIC's address of the
// peer's family, so a dual-stack NIC reaches an IPv6-only peer from its
// IPv6 GID. A device of another backend whose side channel runs on an
// address it has no GID of (kernel TCP on another address of the host)
// sends from the GID of the NIC's address.
func (p *peer) connect(remote Dest, local, peer net.IP) error {
	sgid := p.cfg.GIDIndex
	if sgid < 0 {
		a, ok := netip.AddrFromSlice(local)
		if !ok {
			a = p.cfg.Addr
		}
		var err error
		if sgid, err = p.dev.GIDIndex(a.Unmap()); err != nil {
			if p.cfg.spec.Backend == ibv.BackendLocal || a.Unmap() == p.cfg.Addr {
				return err
			}
			if sgid, err = p.dev.GIDIndex(p.cfg.Addr); err != nil {
				return err
			}
		}
	}
	av := verbs.AddressVector{SL: uint8(p.cfg.SL), PortNum: uint8(p.cfg.IBPort), SGIDIndex: uint8(sgid)}
	if hasInterfaceID(remote.GID) {
		av.DGID, av.HopLimit = remote.GIDAddr(), 1
	} else {
		a, ok := netip.AddrFromSlice(peer)
		if !ok {
			return fmt.Errorf("pingpong: the peer sent no GID and its address is unknown")
		}
		av.DGID, av.HopLimit = verbs.GIDFromAddr(a), 64
	}
	if p.cfg.UD {
		return p.connectUD(remote, av)
	}
	rtr := verbs.QPAttr{State: verbs.QPSRTR, PathMTU: p.cfg.mtu, DestQPN: remote.QPN, RQPSN: remote.PSN,
		MaxDestRdAtomic: 1, MinRNRTimer: 12, AV: av}
	if err := p.qp.Modify(&rtr, verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|
		verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer); err != nil {
		return fmt.Errorf("pingpong: failed to modify QP to RTR: %w", err)
	}
	rts := verbs.QPAttr{State: verbs.QPSRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: p.psn, MaxRdAtomic: 1}
	if err := p.qp.Modify(&rts, verbs.AttrState|verbs.AttrTimeout|verbs.AttrRetryCnt|
		verbs.AttrRNRRetry|verbs.AttrSQPSN|verbs.AttrMaxQPRdAtomic); err != nil {
		return fmt.Errorf("pingpong: failed to modify QP to RTS: %w", err)
	}
	return nil
}

// connectUD is ud_pingpong's pp_connect_ctx: RTR and RTS (with the send
// PSN) need no peer, which the address handle names instead.
func (p *peer) connectUD(remote Dest, av verbs.AddressVector) error {
	if err := p.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTR}, verbs.AttrState); err != nil {
		return fmt.Errorf("pingpong: failed to modify QP to RTR: %w", err)
	}
	if err := p.qp.Modify(&verbs.QPAttr{State: verbs.QPSRTS, SQPSN: p.psn}, verbs.AttrState|verbs.AttrSQPSN); err != nil {
		return fmt.Errorf("pingpong: failed to modify QP to RTS: %w", err)
	}
	ah, err := p.dev.CreateAH(p.pd, av)
	if err != nil {
		return fmt.Errorf("pingpong: failed to create AH: %w", err)
	}
	p.ah, p.remoteQPN = ah, remote.QPN
	return nil
}

// hasInterfaceID reports whether the GID's low 64 bits are non-zero
// (rc_pingpong's dest->gid.global.interface_id test).
func hasInterfaceID(g [16]byte) bool {
	for _, b := range g[8:] {
		if b != 0 {
			return true
		}
	}
	return false
}
