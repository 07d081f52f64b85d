// Memory windows (--mw): each side hands its peer Type 2B windows' rkeys
// instead of its MR's, so every WRITE, READ and atomic the peer makes is
// checked against a window its device bound.
//
// A window is bound by a BIND_MW work request, and a QP takes work
// requests only in RTS, which it reaches after perftest's key exchange has
// already told the peer an rkey. Type 1 windows would not help: ibv_bind_mw
// posts through a QP's send queue too. So each side connects as usual,
// then binds one Type 2B window per QP over that QP's memory (its source
// and target regions), and the two sides trade all keys a second time,
// the windows' rkeys in them; the peer keeps the address and takes the new
// rkey. Type 2B rather than Type 1 because its rkey belongs to the QP that
// bound it, so the peer's QP i reaches QP i's window and no
// other: the check this mode is for. A perftest peer knows nothing of the
// second exchange, hence rnic's peers only.

package perf

import (
	"context"
	"fmt"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// mwFault is a way to break a side's windows, for the tests that show the
// peer really goes through them.
type mwFault uint8

const (
	mwFaultNone mwFault = iota
	// mwFaultNarrow binds each window over the region the peer does not
	// touch (the target for a READ test, the source otherwise).
	mwFaultNarrow
	// mwFaultInvalidate invalidates each window (LOCAL_INV) after the
	// second key exchange has handed out its rkey.
	mwFaultInvalidate
)

// mwAccess is what a window allows: everything the tests do remotely.
const mwAccess = memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic

// checkMW refuses --mw where it cannot work.
func (c *Config) checkMW() error {
	switch {
	case !c.MW:
		return nil
	case c.Op == OpSend || c.UD:
		return fmt.Errorf("%w: --mw: a SEND test uses no rkey", ErrConfig)
	case c.IWARP:
		return fmt.Errorf("%w: --mw runs over RoCEv2 only", ErrConfig)
	case c.RDMACM:
		return fmt.Errorf("%w: --mw trades keys over the TCP side channel, not rdma_cm's", ErrConfig)
	}
	return nil
}

// errMWPerftestPeer is the refusal of --mw against a perftest peer.
var errMWPerftestPeer = fmt.Errorf("%w: --mw needs rnic perf on both sides: perftest takes the MR's rkey before a QP can bind a window, and trades no keys after", ErrConfig)

// windowAllocator is the device's window verbs, or an error saying why
// there are none.
func (s *side) windowAllocator() (ibv.MWAllocator, error) {
	a := s.dev.Query()
	alloc, ok := s.dev.(ibv.MWAllocator)
	switch {
	case a.MaxMW == 0 || a.DeviceCapFlags&verbs.DeviceMemWindowType2B == 0:
		return nil, fmt.Errorf("%w: --mw: device %s has no Type 2B memory windows (max_mw %d)", ErrConfig, s.dev.Name(), a.MaxMW)
	case !ok:
		return nil, fmt.Errorf("%w: --mw: this backend offers no window verbs on %s", ErrConfig, s.dev.Name())
	}
	return alloc, nil
}

// bindWindows allocates and binds QP i's window for every QP, waiting for
// each bind's completion; key(i) then carries the window's rkey.
func (s *side) bindWindows(ctx context.Context) error {
	alloc, err := s.windowAllocator()
	if err != nil {
		return err
	}
	for i, q := range s.qps {
		if q.mw, err = alloc.AllocMW(s.pd, memory.Type2B); err != nil {
			return fmt.Errorf("perf: QP %d: allocate a memory window: %w", i, err)
		}
		addr, n := s.windowSpan(i)
		wr := verbs.SendWR{ID: wrID(i, 0), Opcode: verbs.WRBindMW, Flags: verbs.SendSignaled, Bind: verbs.MWBind{
			Window: q.mw.RKey(), MR: s.mr.LKey(), Addr: addr, Length: n, Access: mwAccess,
			RKey: verbs.IncRKey(q.mw.RKey())}}
		if err := s.postLocal(ctx, i, &wr, verbs.WCBindMW); err != nil {
			return err
		}
		q.mwKey = wr.Bind.RKey
	}
	return nil
}

// windowSpan is where QP i's window lies: its source and target regions,
// or with mwFaultNarrow the one the peer leaves alone.
func (s *side) windowSpan(i int) (addr, n uint64) {
	q := s.qps[i]
	reg := q.dva - q.sva
	switch {
	case s.cfg.mwFault != mwFaultNarrow:
		return q.sva, 2 * reg
	case s.cfg.Op == OpRead:
		return q.dva, reg
	default:
		return q.sva, reg
	}
}

// invalidateWindows invalidates every QP's window (mwFaultInvalidate).
func (s *side) invalidateWindows(ctx context.Context) error {
	for i, q := range s.qps {
		wr := verbs.SendWR{ID: wrID(i, 0), Opcode: verbs.WRLocalInv, Flags: verbs.SendSignaled, InvRKey: q.mwKey}
		if err := s.postLocal(ctx, i, &wr, verbs.WCLocalInv); err != nil {
			return err
		}
	}
	return nil
}

// postLocal posts a local operation (BIND_MW, LOCAL_INV) on QP i and waits
// for its completion, the only one on the send CQ at this point.
func (s *side) postLocal(ctx context.Context, i int, wr *verbs.SendWR, want verbs.WCOpcode) error {
	if err := s.qps[i].qp.PostSend(wr); err != nil {
		return fmt.Errorf("perf: QP %d: post %v: %w", i, wr.Opcode, err)
	}
	sp := newSpinner(ctx)
	wcs := make([]verbs.WC, 1)
	for s.scq.Poll(wcs) == 0 {
		if err := s.scq.Err(); err != nil {
			return fmt.Errorf("perf: QP %d: %v: %w", i, wr.Opcode, err)
		}
		if err := sp.wait(s.scq); err != nil {
			return err
		}
	}
	if wcs[0].Status != verbs.WCSuccess {
		return fmt.Errorf("perf: %v: %w", wr.Opcode, s.completionErr(&wcs[0]))
	}
	if wcs[0].Opcode != want {
		return fmt.Errorf("perf: QP %d: %v completed as %v", i, wr.Opcode, wcs[0].Opcode)
	}
	return nil
}

// xchgWindowKeys binds this side's windows, trades every QP's key again
// (the windows' rkeys now) and takes the peer's rkeys; it returns both
// sides' keys. A side breaks its windows here if told to.
func (s *side) xchgWindowKeys(ctx context.Context, ch *channel) (own, peers []Key, err error) {
	if err := s.bindWindows(ctx); err != nil {
		return nil, nil, err
	}
	own = make([]Key, len(s.qps))
	for i := range own {
		own[i] = s.key(i)
	}
	if peers, err = ch.xchgKeys(own); err != nil {
		return nil, nil, err
	}
	for i, p := range peers {
		q := s.qps[i]
		if p.QPN != q.peer.QPN {
			return nil, nil, fmt.Errorf("%w: window keys: QP %d's peer is QPN %#x, was %#x", ErrPerftestMsg, i, p.QPN, q.peer.QPN)
		}
		q.peer.RKey, q.peer.VAddr = p.RKey, p.VAddr
	}
	if s.cfg.mwFault == mwFaultInvalidate {
		if err := s.invalidateWindows(ctx); err != nil {
			return nil, nil, err
		}
	}
	return own, peers, nil
}

// closeWindows deallocates the windows (before the MR goes).
func (s *side) closeWindows() {
	for _, q := range s.qps {
		if q.mw != nil {
			q.mw.Dealloc()
		}
	}
}
