package ibv

import (
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
)

// ReregMR is implemented by an MR that can be re-registered in place
// (ibv_rereg_mr), keeping its keys: a Local device's. A nil pd or buf
// keeps the PD or the memory and its addresses.
type ReregMR interface {
	Rereg(pd PD, buf []byte, iova uint64, access memory.Access) error
}

var _ ReregMR = (*localMR)(nil)

func (m *localMR) Rereg(pd PD, buf []byte, iova uint64, access memory.Access) error {
	c := nic.MRChange{Buf: buf, IOVA: iova, Access: access}
	if pd != nil {
		p, ok := pd.(*localPD)
		if !ok || p.d != m.d {
			return ErrForeign
		}
		c.PD = p.pd
	}
	return m.d.ReregMR(m.mr, c)
}
