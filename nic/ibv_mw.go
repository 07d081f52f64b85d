// Memory windows through the verbs API: an AsIBV device implements
// ibv.MWAllocator and its QPs ibv.MWBinder.

package nic

import (
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
)

var (
	_ ibv.MWAllocator = (*ibvDevice)(nil)
	_ ibv.MWBinder    = (*ibvQP)(nil)
)

type ibvMW struct {
	d  *Device
	mw *MW
}

func (m *ibvMW) RKey() uint32            { return m.mw.RKey() }
func (m *ibvMW) Type() memory.WindowType { return m.mw.Type() }
func (m *ibvMW) Dealloc() error          { return m.d.DeallocMW(m.mw) }

func (l *ibvDevice) AllocMW(pd ibv.PD, typ memory.WindowType) (ibv.MW, error) {
	p, err := l.pd(pd)
	if err != nil {
		return nil, err
	}
	mw, err := l.d.AllocMW(p, typ)
	if err != nil {
		return nil, err
	}
	return &ibvMW{d: l.d, mw: mw}, nil
}

func (q *ibvQP) BindMW(mw ibv.MW, b ibv.MWBindInfo) (uint32, error) {
	m, ok := mw.(*ibvMW)
	if !ok || m.d != q.l.d {
		return 0, ibv.ErrForeign
	}
	info := MWBindInfo{ID: b.ID, Flags: b.Flags, Addr: b.Addr, Length: b.Length, Access: b.Access}
	if b.MR != nil {
		mr, ok := b.MR.(*ibvMR)
		if !ok || mr.d != q.l.d {
			return 0, ibv.ErrForeign
		}
		info.MR = mr.mr
	}
	return q.qp.BindMW(m.mw, info)
}
