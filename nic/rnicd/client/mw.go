// Memory windows of the daemon (ibv.MWAllocator, ibv.MWBinder): ALLOC_MW
// and DEALLOC_MW are calls; a bind is a BIND_MW WQE in the send ring like
// any WR, so it executes in order with the QP's other work.

package client

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

var (
	_ ibv.MWAllocator = (*Device)(nil)
	_ ibv.MWBinder    = (*QP)(nil)
)

// MW is a memory window of the daemon.
type MW struct {
	d   *Device
	h   uint32
	pd  *PD
	typ memory.WindowType

	mu   sync.Mutex
	rkey uint32 // at allocation, then as of the last BindMW (type 1)
}

// AllocMW allocates a window of type typ in pd.
func (d *Device) AllocMW(pd ibv.PD, typ memory.WindowType) (ibv.MW, error) {
	p, err := d.pd(pd)
	if err != nil {
		return nil, err
	}
	var rep proto.AllocMWReply
	if _, err := d.call(proto.OpAllocMW, &proto.AllocMWReq{PD: p.h, Type: uint32(typ)}, nil, &rep); err != nil {
		return nil, err
	}
	return &MW{d: d, h: rep.MW, pd: p, typ: typ, rkey: rep.RKey}, nil
}

// RKey is the window's rkey: a Type 1 window's as of its last BindMW, a
// Type 2B window's as allocated (a BIND_MW WR's Bind.RKey is its rkey
// once the bind completes).
func (m *MW) RKey() uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rkey
}

// Type is the window's type.
func (m *MW) Type() memory.WindowType { return m.typ }

// Dealloc frees the window; a bound window's rkey dies with it.
func (m *MW) Dealloc() error {
	_, err := m.d.call(proto.OpDeallocMW, &proto.Handle{H: m.h}, nil, &proto.Empty{})
	return err
}

// BindMW binds a Type 1 window through the QP's send queue and returns its
// new rkey: the window's key index with a random key byte, as
// unpredictable for a peer as the daemon's own.
func (q *QP) BindMW(mw ibv.MW, b ibv.MWBindInfo) (uint32, error) {
	m, ok := mw.(*MW)
	if !ok || m.d != q.d {
		return 0, ibv.ErrForeign
	}
	if m.typ != memory.Type1 {
		return 0, fmt.Errorf("rnicd: bind MW: ibv_bind_mw binds type 1 windows; post a BIND_MW WR for %v: %w", m.typ, verbs.ErrInvalid)
	}
	if b.Access&memory.ZeroBased != 0 {
		return 0, fmt.Errorf("rnicd: bind MW: a type 1 window cannot be zero-based: %w", verbs.ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	wr := verbs.SendWR{ID: b.ID, Opcode: verbs.WRBindMW, Flags: b.Flags, Bind: verbs.MWBind{
		Window: m.rkey, Addr: b.Addr, Length: b.Length, Access: b.Access, RKey: nextRKey(m.rkey),
	}}
	if b.MR != nil {
		mr, ok := b.MR.(*MR)
		if !ok || mr.d != q.d {
			return 0, ibv.ErrForeign
		}
		wr.Bind.MR = mr.LKey()
	}
	if err := q.PostSend(&wr); err != nil {
		return 0, err
	}
	m.rkey = wr.Bind.RKey
	return m.rkey, nil
}

// nextRKey returns rkey with a random key byte other than its own.
func nextRKey(rkey uint32) uint32 {
	b := uint32(1 + rand.IntN(255)) // never 0: the key byte changes
	return rkey&^0xff | (rkey+b)&0xff
}
