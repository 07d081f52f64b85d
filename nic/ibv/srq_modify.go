// SRQ limits (ibv_modify_srq, ibv_query_srq) on devices that have them:
// an optional interface of SRQ, as Counters is of Device, so that a
// backend without them (or a wrapper) simply does not implement it.

package ibv

import "github.com/rnic/rnic/nic"

// SRQModifier is an SRQ whose limit can be armed (IBV_SRQ_LIMIT: once
// fewer WQEs than the limit remain, the device raises
// EventSRQLimitReached and disarms it) and whose attributes can be read.
type SRQModifier interface {
	ModifySRQ(attr nic.SRQAttr, mask nic.SRQAttrMask) error
	QuerySRQ() nic.SRQAttr
}

var _ SRQModifier = (*localSRQ)(nil)

func (s *localSRQ) ModifySRQ(attr nic.SRQAttr, mask nic.SRQAttrMask) error {
	return s.srq.ModifySRQ(attr, mask)
}

func (s *localSRQ) QuerySRQ() nic.SRQAttr { return s.srq.Query() }
