package ibv

import (
	"github.com/rnic/rnic/memory"
)

// ReregMR is implemented by an MR that can be re-registered in place
// (ibv_rereg_mr), keeping its keys: an in-process NIC's (nic.AsIBV). A nil pd or buf
// keeps the PD or the memory and its addresses.
type ReregMR interface {
	Rereg(pd PD, buf []byte, iova uint64, access memory.Access) error
}
