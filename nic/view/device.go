// What the view shows of each NIC, asked of the daemon: its statistics
// listing (names, in the order the drop-in libibverbs lists them, GIDs,
// state) and each device opened once (node GUID, transport, port).

package view

import (
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/verbs"
)

// Device is one NIC of the daemon as the view shows it.
type Device struct {
	// Index is the NIC's place in the daemon's device list, 0-based: the
	// N of uverbsN, as the drop-in libibverbs numbers its devices.
	Index        int
	Name         string
	NodeGUID     uint64
	SysImageGUID uint64
	FwVer        string
	Transport    verbs.Transport
	State        verbs.PortState
	PhysState    uint8
	LinkLayer    verbs.LinkLayer
	LinkMTU      int
	GIDs         []netip.Addr
	GIDTblLen    int
	PKeyTblLen   int
}

// Addrs are the NIC's IP addresses: its GIDs, IPv4-mapped ones as IPv4,
// without the link-local GID (an interface makes its own from its MAC).
func (d *Device) Addrs() []netip.Addr {
	var out []netip.Addr
	for _, g := range d.GIDs {
		a := g.Unmap()
		if !a.IsValid() || a.IsUnspecified() || a.IsLinkLocalUnicast() {
			continue
		}
		out = append(out, a)
	}
	return out
}

// Gather asks the rnicd on socket for its devices and opens each once.
func Gather(socket string) ([]Device, error) {
	st, err := client.QueryStat(socket)
	if err != nil {
		return nil, err
	}
	devs := make([]Device, 0, len(st.Devices))
	for i, sd := range st.Devices {
		d := Device{Index: i, Name: sd.Name, State: sd.State, LinkMTU: int(sd.LinkMTU), GIDs: sd.GIDs}
		if err := d.query(socket); err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// query fills what only an open device tells.
func (d *Device) query(socket string) error {
	dev, err := ibv.Open(ibv.Spec{Backend: ibv.BackendDaemon, Name: d.Name, Socket: socket})
	if err != nil {
		return fmt.Errorf("view: %s: %w", d.Name, err)
	}
	defer dev.Close()
	a := dev.Query()
	p, err := dev.QueryPort(1)
	if err != nil {
		return fmt.Errorf("view: %s port 1: %w", d.Name, err)
	}
	d.NodeGUID, d.SysImageGUID, d.FwVer = a.NodeGUID, a.SysImageGUID, a.FwVer
	d.Transport = a.Transport
	d.State, d.PhysState, d.LinkLayer, d.LinkMTU = p.State, p.PhysState, p.LinkLayer, p.LinkMTU
	d.GIDs, d.GIDTblLen, d.PKeyTblLen = dev.GIDs(), p.GIDTblLen, p.PKeyTblLen
	return nil
}
