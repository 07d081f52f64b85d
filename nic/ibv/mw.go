// Memory windows (ibv_alloc_mw, ibv_bind_mw, ibv_dealloc_mw) on devices
// that have them (Query's MaxMW > 0): optional interfaces of Device and QP,
// as ReregMR is of MR. A Type 2B window is bound by a BIND_MW work request
// posted with QP.PostSend (verbs.SendWR.Bind names the window by its rkey
// and the MR by its lkey, with the new rkey: verbs.IncRKey of the old one).

package ibv

import (
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// MW is a memory window (struct ibv_mw).
type MW interface {
	// RKey is the window's rkey: a Type 1 window's as of its last BindMW
	// (set at post time, as ibv_bind_mw sets mw->rkey), a Type 2B
	// window's as of its allocation or a bind this process saw.
	RKey() uint32
	Type() memory.WindowType
	// Dealloc frees the window (ibv_dealloc_mw); a bound window's rkey
	// dies with it.
	Dealloc() error
}

// MWAllocator is implemented by a Device with memory windows.
type MWAllocator interface {
	// AllocMW allocates an unbound window of type typ in pd; any type
	// but 1 and 2 (2B) fails with verbs.ErrInvalid.
	AllocMW(pd PD, typ memory.WindowType) (MW, error)
}

// MWBindInfo is a Type 1 bind (struct ibv_mw_bind): the WR's ID and send
// flags, and Length bytes of MR at Addr with the window's remote rights.
// A nil MR or zero Length unbinds the window.
type MWBindInfo struct {
	ID     uint64
	Flags  verbs.SendFlags
	MR     MR
	Addr   uint64
	Length uint64
	Access memory.Access
}

// MWBinder is implemented by a QP of a device with memory windows.
type MWBinder interface {
	// BindMW binds a Type 1 window through the QP's send queue
	// (ibv_bind_mw) and returns its new rkey, usable once the bind
	// completes with verbs.WCBindMW; a bind that breaks a rule completes
	// with verbs.WCMWBindErr.
	BindMW(mw MW, b MWBindInfo) (uint32, error)
}
