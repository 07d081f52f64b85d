// Devices: a NIC of this process on a TAP, and a device of another backend
// opened by its string.

package progkit

import (
	"fmt"
	"io"
	"net/netip"

	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
)

// TAPConfig is t with what the program's flags give every NIC filled in
// where t leaves it: the NIC's name, its capture and its trace.
func TAPConfig(t tapnic.Config, name string, pcap *embedded.PcapWriter, trace io.Writer) tapnic.Config {
	if t.Name == "" {
		t.Name = name
	}
	if t.Pcap == nil {
		t.Pcap = pcap
	}
	if t.Trace == nil {
		t.Trace = trace
	}
	return t
}

// TAPAddrs checks that t names a TAP and gives it an address, and returns
// its addresses (GID index i+1 is the i-th), unmapped.
func (p Program) TAPAddrs(t *tapnic.Config) ([]netip.Addr, error) {
	switch {
	case t.TAP == "":
		return nil, fmt.Errorf("%w: TAP mode without a TAP device name", p.ErrConfig)
	case len(t.Prefixes) == 0:
		return nil, fmt.Errorf("%w: TAP %s has no address", p.ErrConfig, t.TAP)
	}
	own := make([]netip.Addr, len(t.Prefixes))
	for i, pf := range t.Prefixes {
		own[i] = pf.Addr().Unmap()
	}
	return own, nil
}

// NotLocal is the error for a setting (what: "a TAP", "a capture") only a
// NIC of this process has, given for spec, a device of another backend.
func (p Program) NotLocal(spec ibv.Spec, what string) error {
	return fmt.Errorf("%w: %s is for a NIC of this process, not device %s (its %s backend owns the port)",
		p.ErrConfig, what, spec, spec.Backend)
}

// OpenDevice opens the device of another backend spec names and runs
// check on it (picking addresses from its GID table, refusing one without
// rdma_cm); a device check refuses is closed.
func (p Program) OpenDevice(spec ibv.Spec, check func(ibv.Device) error) (ibv.Device, error) {
	dev, err := ibv.Open(spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	if check != nil {
		if err := check(dev); err != nil {
			dev.Close()
			return nil, err
		}
	}
	return dev, nil
}
