// The optional capabilities of a daemon's device (ibv.Network for side
// channels, ibv.ConnManager for rdma_cm): the device ibv.Open returns
// implements each exactly when the daemon's device offers it, so that a
// program's type assertions tell the truth, as nic.AsIBV's do.

package client

import (
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

// The wrappers that add the capabilities the daemon offers; embedding
// promotes *Device's methods and the interface's, nothing else.
type (
	deviceNet struct {
		*Device
		ibv.Network
	}
	deviceCM struct {
		*Device
		ibv.ConnManager
	}
	deviceNetCM struct {
		*Device
		ibv.Network
		ibv.ConnManager
	}
)

// available asks the daemon whether the device offers a concern (op is
// its query); a daemon that does not know the op does not.
func (d *Device) available(op proto.Op) bool {
	var rep proto.Available
	_, err := d.call(op, &proto.Empty{}, nil, &rep)
	return err == nil && rep.Available
}

// Network returns the daemon's TCP/IP stack of the device as an
// ibv.Network, or nil if the daemon offers none.
func (d *Device) Network() ibv.Network {
	if !d.available(proto.OpNetQuery) {
		return nil
	}
	return network{d}
}

// ConnManager returns the daemon's rdma_cm of the device as an
// ibv.ConnManager, or nil if the daemon offers none.
func (d *Device) ConnManager() ibv.ConnManager {
	if !d.available(proto.OpCMQuery) {
		return nil
	}
	return connManager{d}
}

// WithCapabilities returns d as an ibv.Device that implements ibv.Network
// and ibv.ConnManager exactly when the daemon offers them (what ibv.Open
// returns).
func (d *Device) WithCapabilities() ibv.Device {
	n, cm := d.Network(), d.ConnManager()
	switch {
	case n != nil && cm != nil:
		return deviceNetCM{d, n, cm}
	case n != nil:
		return deviceNet{d, n}
	case cm != nil:
		return deviceCM{d, cm}
	}
	return d
}
