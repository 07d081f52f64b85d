package agent

import (
	"net"
	"os"
	"strings"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// deviceInfo answers device_info.
func deviceInfo(d ibv.Device, kind string) agentproto.DeviceInfo {
	a := d.Query()
	info := agentproto.DeviceInfo{Name: d.Name(), Kind: kind, Transport: "roce", GIDs: []string{},
		MaxQPWR: a.MaxQPWR, MaxSGE: a.MaxSGE, MaxCQE: a.MaxCQE, MaxMRSize: a.MaxMRSize,
		MaxQPRdAtom: a.MaxQPRdAtom, MaxQPInitRdAtom: a.MaxQPInitRdAtom, Atomics: a.AtomicCap != verbs.AtomicNone}
	if a.Transport == verbs.TransportIWARP {
		info.Transport = "iwarp"
	}
	const flush = verbs.DeviceFlushGlobal | verbs.DeviceFlushPersistent
	info.AtomicWrite = a.DeviceCapFlagsEx&verbs.DeviceAtomicWrite != 0
	info.Flush = a.DeviceCapFlagsEx&flush == flush
	if _, ok := d.(ibv.MWAllocator); ok && a.MaxMW > 0 && a.DeviceCapFlags&verbs.DeviceMemWindowType2B != 0 {
		info.MWType2B = true
	}
	info.Multicast = a.MaxMcastGrp > 0 && a.MaxMcastQPAttach > 0
	if info.Kind == "" {
		info.Kind = kindOf(d)
	}
	if p, err := d.QueryPort(1); err == nil {
		info.ActiveMTU = p.ActiveMTU.Bytes()
	}
	for _, g := range d.GIDs() {
		info.GIDs = append(info.GIDs, g.String())
		// A link-local GID is the port's EUI-64: it gives the MAC.
		if b := g.As16(); g.Is6() && g.IsLinkLocalUnicast() && b[11] == 0xff && b[12] == 0xfe && info.MAC == "" {
			info.MAC = net.HardwareAddr{b[8] ^ 2, b[9], b[10], b[13], b[14], b[15]}.String()
		}
	}
	_, info.CM = d.(ibv.ConnManager)
	info.Host = hostKernel()
	return info
}

// hostKernel names the kernel the agent runs on ("Linux 6.1.0-56-amd64"),
// "" where it cannot be read: a report says which kernel a DUT driver
// such as rxe or siw came with.
func hostKernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return "Linux " + strings.TrimSpace(string(b))
}

// Vendor IDs of the software devices (ibv_query_device's vendor_id):
// Linux rxe's (which rnic's own NICs report too) and siw's ("bmt").
const (
	vendorRXE = 0xFFFFFF
	vendorSIW = 0x626d74
)

// kindOf names the DUT for known deviations: rnic's own NICs, rxe and siw
// by their vendor IDs (rnic's NICs are named rnic*, whatever the backend),
// other devices by their name without its number (mlx5_0 → mlx5).
func kindOf(d ibv.Device) string {
	name := d.Name()
	if nic.DeviceOf(d) != nil || strings.HasPrefix(name, "rnic") {
		return "rnic"
	}
	switch d.Query().VendorID {
	case vendorRXE:
		return "rxe"
	case vendorSIW:
		return "siw"
	}
	if i := strings.LastIndexAny(name, "_"); i > 0 {
		return name[:i]
	}
	return strings.TrimRight(name, "0123456789")
}
