// Address handles (ibv_create_ah) and the address-vector checks shared with
// the AV attribute of ibv_modify_qp. On RoCE every AV has a GRH: a
// destination GID (an IP address), a source GID index, traffic class, flow
// label and hop limit, which become the IP header.

package nic

import (
	"fmt"
	"sync"

	"github.com/rnic/rnic/nic/verbs"
)

// AH is an address handle: an immutable, validated address vector for UD
// sends, in one PD.
type AH struct {
	d  *Device
	pd *PD
	av verbs.AddressVector

	mu   sync.Mutex
	dead bool
}

// CreateAH creates an address handle for av in pd (ibv_create_ah). The
// AV is checked as for modify_qp, except that a multicast destination is
// allowed (UD multicast).
func (d *Device) CreateAH(pd *PD, av verbs.AddressVector) (*AH, error) {
	norm, reason := d.checkAV(&av, true)
	if reason != "" {
		return nil, errorf(verbs.ErrInvalid, "create AH: %s", reason)
	}
	d.mu.Lock()
	err := d.reserve(&d.ahs, d.limits.MaxAH, "AH")
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := pd.acquire(d); err != nil {
		d.release(&d.ahs)
		return nil, fmt.Errorf("nic: create AH: %w", err)
	}
	ah := &AH{d: d, pd: pd, av: norm}
	d.addrHands.Store(&ah.av, ah)
	return ah, nil
}

// AV returns the AH's address vector, to be put in SendWR.AH. It must not
// be modified: PostSend recognises the AH by this pointer.
func (ah *AH) AV() *verbs.AddressVector { return &ah.av }

// PD returns the AH's protection domain.
func (ah *AH) PD() *PD { return ah.pd }

// Destroy destroys the AH (ibv_destroy_ah). WRs already posted with it
// are unaffected: the engine holds the immutable address vector.
func (ah *AH) Destroy() error {
	ah.mu.Lock()
	if ah.dead {
		ah.mu.Unlock()
		return errorf(verbs.ErrDestroyed, "destroy AH")
	}
	ah.dead = true
	ah.mu.Unlock()
	ah.d.addrHands.Delete(&ah.av)
	ah.pd.put()
	ah.d.release(&ah.d.ahs)
	return nil
}

// lookupAH returns the live AH whose AV() is av, or nil.
func (d *Device) lookupAH(av *verbs.AddressVector) *AH {
	v, ok := d.addrHands.Load(av)
	if !ok {
		return nil
	}
	return v.(*AH)
}

// flowLabelMask keeps the 20 bits of an IPv6 flow label.
const flowLabelMask = 0xFFFFF

// checkAV validates an address vector and returns it with its DGID in GID
// form (an IPv4 address becomes IPv4-mapped), or a reason it is invalid.
// multicast allows a multicast DGID (address handles and UD only: IB
// multicast is a UD service).
func (d *Device) checkAV(av *verbs.AddressVector, multicast bool) (verbs.AddressVector, string) {
	n := *av
	n.DGID = verbs.GIDFromAddr(av.DGID)
	switch {
	case !n.DGID.IsValid():
		return n, "DGID is not set"
	case n.DGID.IsUnspecified() || n.DGID.Unmap().IsUnspecified():
		return n, fmt.Sprintf("DGID %v is unspecified", av.DGID)
	case !multicast && (n.DGID.IsMulticast() || n.DGID.Unmap().IsMulticast()):
		return n, fmt.Sprintf("DGID %v is multicast, allowed for UD only", av.DGID)
	case int(av.SGIDIndex) >= len(d.gids):
		return n, fmt.Sprintf("sgid_index %d, GID table has %d entries", av.SGIDIndex, len(d.gids))
	case d.gids[av.SGIDIndex].Is4In6() != n.DGID.Is4In6():
		// RoCEv2 carries both GIDs in one IPv4 or IPv6 header.
		return n, fmt.Sprintf("SGID %v and DGID %v are not the same IP version", d.gids[av.SGIDIndex], av.DGID)
	case av.PortNum != 1:
		return n, fmt.Sprintf("port_num %d, the device has port 1 only", av.PortNum)
	case av.SL > 15:
		return n, fmt.Sprintf("sl %d exceeds 4 bits", av.SL)
	}
	// The flow label is a 20-bit field: providers keep the low 20 bits of
	// what they are given (mlx5 masks it; rxe sends none), and consumers
	// count on it: UCX puts ~0 in every address vector.
	n.FlowLabel = av.FlowLabel & flowLabelMask
	// Hop limit and traffic class use their whole byte: the engine sends
	// them as TTL/hop limit and TOS/traffic class.
	return n, ""
}
