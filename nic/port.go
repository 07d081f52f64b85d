// The device's single port (ibv_query_port): ACTIVE on an Ethernet link
// layer while its link is up (DOWN otherwise, SetPortActive), with its MTU
// derived from the link MTU as rxe does, and the one P_Key RoCE uses.

package nic

import (
	"github.com/rnic/rnic/nic/verbs"
)

// DefaultPKey is the one P_Key of a RoCE port (full member, default
// partition); rxe accepts no other (its P_Key table has this one entry).
const DefaultPKey = 0xFFFF

// pkeyTableLen is the port's P_Key table length: only index 0,
// DefaultPKey, as Linux 6.1's rxe has (pkeys/0 is its one file).
const pkeyTableLen = 1

// maxPKeys is max_pkeys, rxe's 64 (RXE_MAX_PKEYS): a QP's pkey_index may be
// any index below it. rxe takes any index at all and always sends the
// default P_Key; nic refuses 64 and above and sends DefaultPKey too.
const maxPKeys = 64

// headerRoom is what rxe subtracts from the link MTU to get the largest IB
// MTU (RXE_MAX_HDR_LENGTH: Ethernet excluded, IPv6 + UDP + BTH + the
// longest extension headers + ICRC, rounded).
const headerRoom = 80

// DefaultLinkMTU is the Ethernet MTU assumed when Config.MTU is 0.
const DefaultLinkMTU = 1500

// activeMTU returns the largest IB MTU not above linkMTU − 80, rxe's rule
// (eth_mtu_int_to_enum): Ethernet 1500 gives 1024, 9000 gives 4096. It
// returns 0 when not even 256 bytes fit.
func activeMTU(linkMTU int) verbs.MTU {
	room := linkMTU - headerRoom
	for m := verbs.MTU4096; m >= verbs.MTU256; m-- {
		if m.Bytes() <= room {
			return m
		}
	}
	return 0
}

// checkPort accepts port 1, the only one (ports are numbered from 1).
func checkPort(port uint8) error {
	if port != 1 {
		return errorf(verbs.ErrInvalid, "port %d: the device has port 1 only", port)
	}
	return nil
}

// QueryPort returns the attributes of port (ibv_query_port).
func (d *Device) QueryPort(port uint8) (verbs.PortAttr, error) {
	if err := checkPort(port); err != nil {
		return verbs.PortAttr{}, err
	}
	state, phys := verbs.PortActive, uint8(verbs.PhysStateLinkUp)
	if d.portDown.Load() {
		state, phys = verbs.PortDown, verbs.PhysStateDisabled
	}
	return verbs.PortAttr{
		State:      state,
		MaxMTU:     verbs.MTU4096,
		ActiveMTU:  d.mtu,
		GIDTblLen:  len(d.gids),
		MaxMsgSize: verbs.MaxMsgSize,
		PKeyTblLen: pkeyTableLen,
		PhysState:  phys,
		LinkLayer:  verbs.LinkLayerEthernet,
		LinkMTU:    d.linkMTU,
	}, nil
}

// QueryPKey returns the P_Key at index of port (ibv_query_pkey).
func (d *Device) QueryPKey(port uint8, index int) (uint16, error) {
	if err := checkPort(port); err != nil {
		return 0, err
	}
	if index != 0 {
		return 0, errorf(verbs.ErrInvalid, "P_Key index %d, table has %d", index, pkeyTableLen)
	}
	return DefaultPKey, nil
}

// SetPortActive tells the device that the link under its port went up
// (true) or down: the port becomes ACTIVE or DOWN (physical state LinkUp
// or Disabled) and, on a change, the device raises IBV_EVENT_PORT_ACTIVE
// or IBV_EVENT_PORT_ERR, as rxe does when its net device goes up or down.
// A NIC whose link cannot go down never calls it: its port stays ACTIVE.
func (d *Device) SetPortActive(up bool) {
	if d.portDown.Swap(!up) == !up {
		return // no change
	}
	t := verbs.EventPortActive
	if !up {
		t = verbs.EventPortErr
	}
	d.events.raise(Event{Type: t, Port: 1})
}
