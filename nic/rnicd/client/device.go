// The device's attributes, queries, counters, protection domains and
// address handles.

package client

import (
	"net/netip"
	"slices"
	"sync/atomic"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// Name returns the device name.
func (d *Device) Name() string { return d.name }

// Spec returns the device string the device was opened with.
func (d *Device) Spec() ibv.Spec { return d.spec }

// Query returns the device attributes (as the daemon reported them at
// open).
// SRQ_RESIZE is the daemon's NIC's, which RESIZE_SRQ offers the C
// library; this client's SRQs are not resized (they implement no
// ibv.SRQModifier), so it does not claim it.
func (d *Device) Query() verbs.DeviceAttr {
	a := d.attr
	a.DeviceCapFlags &^= verbs.DeviceSRQResize
	return a
}

// QueryPort returns a port's attributes.
func (d *Device) QueryPort(port uint8) (verbs.PortAttr, error) {
	var rep proto.PortReply
	if _, err := d.call(proto.OpQueryPort, &proto.QueryPortReq{Port: port}, nil, &rep); err != nil {
		return verbs.PortAttr{}, err
	}
	return rep.Attr, nil
}

// QueryGID returns the GID at index.
func (d *Device) QueryGID(port uint8, index int) (netip.Addr, error) {
	if index < 0 || index > 1<<20 {
		index = 1 << 20 // out of every table; the daemon says so
	}
	var rep proto.GID
	if _, err := d.call(proto.OpQueryGID, &proto.QueryGIDReq{Port: port, Index: uint32(index)}, nil, &rep); err != nil {
		return netip.Addr{}, err
	}
	return rep.Addr, nil
}

// GIDs returns the GID table.
func (d *Device) GIDs() []netip.Addr { return slices.Clone(d.gids) }

// GIDIndex returns the index of addr's GID.
func (d *Device) GIDIndex(addr netip.Addr) (int, error) {
	var rep proto.Index
	if _, err := d.call(proto.OpGIDIndex, &proto.GID{Addr: addr}, nil, &rep); err != nil {
		return 0, err
	}
	return int(rep.Index), nil
}

// Events delivers asynchronous events; it closes when the connection
// ends (Close, or the daemon gone).
func (d *Device) Events() <-chan ibv.Event { return d.events }

// Counters returns the port counters of the daemon's NIC; none if the
// daemon cannot be asked.
func (d *Device) Counters() []ibv.Counter {
	var rep proto.CountersReply
	if _, err := d.call(proto.OpCounters, &proto.Empty{}, nil, &rep); err != nil {
		return nil
	}
	out := make([]ibv.Counter, len(rep.Counters))
	for i, c := range rep.Counters {
		out[i] = ibv.Counter{Name: c.Name, Value: c.Value}
	}
	return out
}

// event delivers an event message.
func (d *Device) event(h proto.Header, body []byte) {
	if h.Op != proto.OpEvent {
		if f := eventHandler(h.Op); f != nil {
			f(d, body)
		}
		return
	}
	var m proto.Event
	r := proto.NewReader(body)
	m.Decode(r)
	if r.Done() != nil {
		return
	}
	e := ibv.Event{Type: m.Type, Port: m.Port}
	d.mu.Lock()
	switch m.Object {
	case proto.ObjectQP:
		if q, ok := d.qps[m.Handle]; ok {
			e.QP = q
		}
	case proto.ObjectCQ:
		if c, ok := d.cqs[m.Handle]; ok {
			e.CQ = c
		}
	case proto.ObjectSRQ:
		if s, ok := d.srqs[m.Handle]; ok {
			e.SRQ = s
		}
	}
	d.mu.Unlock()
	if m.Object != proto.ObjectNone && e.QP == nil && e.CQ == nil && e.SRQ == nil {
		return // an object destroyed meanwhile
	}
	select {
	case d.events <- e:
	default: // as nic does: a reader that does not read loses events
		d.overflow.Add(1)
	}
}

// PD is a protection domain of the daemon.
type PD struct {
	d *Device
	h uint32
}

// AllocPD allocates a protection domain.
func (d *Device) AllocPD() (ibv.PD, error) {
	var rep proto.Handle
	if _, err := d.call(proto.OpAllocPD, &proto.Empty{}, nil, &rep); err != nil {
		return nil, err
	}
	return &PD{d: d, h: rep.H}, nil
}

// Dealloc frees the PD.
func (p *PD) Dealloc() error {
	_, err := p.d.call(proto.OpDeallocPD, &proto.Handle{H: p.h}, nil, &proto.Empty{})
	return err
}

// pd returns pd as a PD of this device.
func (d *Device) pd(pd ibv.PD) (*PD, error) {
	p, ok := pd.(*PD)
	if !ok || p.d != d {
		return nil, ibv.ErrForeign
	}
	return p, nil
}

// AH is an address handle of the daemon.
type AH struct {
	d    *Device
	h    uint32
	pd   *PD
	av   verbs.AddressVector
	dead atomic.Bool
}

// AV returns the handle's address vector (as the NIC normalised it), to
// put in SendWR.AH.
func (a *AH) AV() *verbs.AddressVector { return &a.av }

// Destroy destroys the AH.
func (a *AH) Destroy() error {
	if _, err := a.d.call(proto.OpDestroyAH, &proto.Handle{H: a.h}, nil, &proto.Empty{}); err != nil {
		return err
	}
	a.dead.Store(true)
	a.d.keys.Lock()
	delete(a.d.ahs, &a.av)
	a.d.keys.Unlock()
	return nil
}

// CreateAH creates an address handle.
func (d *Device) CreateAH(pd ibv.PD, av verbs.AddressVector) (ibv.AH, error) {
	p, err := d.pd(pd)
	if err != nil {
		return nil, err
	}
	var rep proto.CreateAHReply
	if _, err := d.call(proto.OpCreateAH, &proto.CreateAHReq{PD: p.h, AV: av}, nil, &rep); err != nil {
		return nil, err
	}
	a := &AH{d: d, h: rep.AH, pd: p, av: rep.AV}
	d.keys.Lock()
	d.ahs[&a.av] = a
	d.keys.Unlock()
	return a, nil
}

// ah returns the live AH whose AV() is av, or nil.
func (d *Device) ah(av *verbs.AddressVector) *AH {
	d.keys.RLock()
	a := d.ahs[av]
	d.keys.RUnlock()
	return a
}
