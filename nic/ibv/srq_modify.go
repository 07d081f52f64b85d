// SRQ limits (ibv_modify_srq, ibv_query_srq) on devices that have them:
// an optional interface of SRQ, as Counters is of Device, so that a
// backend without them (or a wrapper) simply does not implement it.

package ibv

import "github.com/rnic/rnic/nic/verbs"

// SRQModifier is an SRQ whose limit can be armed (IBV_SRQ_LIMIT: once
// fewer WQEs than the limit remain, the device raises
// EventSRQLimitReached and disarms it) and whose attributes can be read.
type SRQModifier interface {
	ModifySRQ(attr verbs.SRQAttr, mask verbs.SRQAttrMask) error
	QuerySRQ() verbs.SRQAttr
}
