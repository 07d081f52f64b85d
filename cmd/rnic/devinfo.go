package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

const devinfoHelp = `usage: rnic devinfo [-d DEVICE] [-v] [--socket PATH] [--addr IP]

Shows the attributes of RDMA devices as ibv_devinfo does: the device's
identity, with -v its limits (ibv_query_device), and its port: state, MTUs,
link layer, with -v the port's limits, and its GID table with each GID's
type. Without -d, every device rnic devices lists; -d DEVICE is one
(rnic0, NAME@SOCKET, verbs:NAME; a bare NAME other than rnicN is looked
up among the rnicd's and libibverbs' devices, and is an error if none
has it).

rnic's NICs speak RoCEv2 on an Ethernet link: each GID is an address of
the NIC (IPv4 ones as ::ffff:a.b.c.d) and of type RoCE v2. A libibverbs
device's GID types are not reported through rnic's verbs API; its GIDs are
shown without one.

Exits 1 when a device cannot be opened, 2 on bad usage.

flags:
`

func runDevinfo(args []string, stdout, stderr io.Writer) int {
	flags := pflag.NewFlagSet("rnic devinfo", pflag.ContinueOnError)
	flags.SetOutput(io.Discard)
	var src deviceSources
	src.add(flags)
	dev := flags.StringP("ib-dev", "d", "", "the device (default: every device)")
	verbose := flags.BoolP("verbose", "v", false, "print all the attributes")
	flags.Usage = func() {
		fmt.Fprint(flags.Output(), devinfoHelp)
		flags.PrintDefaults()
	}
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "rnic %s (rnic help devinfo)\n", withPrefix("devinfo: ", err))
		return 2
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			flags.SetOutput(stdout)
			flags.Usage()
			return 0
		}
		return usageErr(err)
	}
	if flags.NArg() > 0 {
		return usageErr(fmt.Errorf("unexpected argument %q", flags.Arg(0)))
	}
	var devs []deviceEntry
	status := 0
	if *dev != "" {
		e, err := src.entry(*dev)
		if err != nil {
			return usageErr(fmt.Errorf("-d: %w", err))
		}
		devs = []deviceEntry{e}
	} else {
		var err error
		if devs, err = src.list(socketChosen(flags)); err != nil {
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("devinfo: ", err))
			status = 1
		}
	}
	for _, e := range devs {
		d, err := e.open()
		if err != nil {
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("devinfo: ", err))
			status = 1
			continue
		}
		err = printDevinfo(stdout, e, d, *verbose)
		d.Close()
		if err != nil {
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("devinfo: ", err))
			status = 1
		}
	}
	return status
}

// entry is the device a -d string names.
func (s *deviceSources) entry(dev string) (deviceEntry, error) {
	spec, err := ibv.ParseSpec(dev)
	if err != nil {
		return deviceEntry{}, err
	}
	if spec.Backend != ibv.BackendLocal {
		return deviceEntry{spec: spec, backend: spec.Backend.String(), open: func() (ibv.Device, error) { return ibv.Open(spec) }}, nil
	}
	if !isLocalName(spec.Name) {
		// A bare name that is not an in-process NIC's is looked up
		// among the devices there are, as ibv_devinfo -d does: a
		// daemon's NIC or a libibverbs device of that name.
		return s.named(spec.Name)
	}
	addr, err := netip.ParseAddr(s.addr)
	if err != nil {
		return deviceEntry{}, fmt.Errorf("--addr: %w", err)
	}
	return deviceEntry{spec: spec, backend: "in-process", open: func() (ibv.Device, error) { return openLocal(spec.Name, addr) }}, nil
}

// isLocalName reports whether name is an in-process NIC's: rnicN.
func isLocalName(name string) bool {
	digits, ok := strings.CutPrefix(name, "rnic")
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// named is the listed device called name (NAME of NAME@SOCKET, or a
// libibverbs device's name), or an error that says what there is.
func (s *deviceSources) named(name string) (deviceEntry, error) {
	devs, err := s.list(false)
	if err != nil {
		return deviceEntry{}, err
	}
	var have []string
	for _, e := range devs {
		if e.spec.Name == name && e.spec.Backend != ibv.BackendLocal {
			return e, nil
		}
		have = append(have, e.spec.String())
	}
	return deviceEntry{}, fmt.Errorf("no device %s: in-process NICs are named rnicN, and no rnicd NIC or libibverbs device has that name (there are: %s)", name, strings.Join(have, ", "))
}

// printDevinfo prints one device as ibv_devinfo [-v].
func printDevinfo(w io.Writer, e deviceEntry, d ibv.Device, verbose bool) error {
	a := d.Query()
	fmt.Fprintf(w, "hca_id:\t%s\n", e.spec)
	field := func(indent, name string, format string, v ...any) {
		fmt.Fprintf(w, "%s%-24s%s\n", indent, name+":", fmt.Sprintf(format, v...))
	}
	const dev, port = "\t", "\t\t\t"
	field(dev, "backend", "%s", e.backend)
	field(dev, "transport", "%s (%d)", a.Transport, a.Transport)
	field(dev, "fw_ver", "%s", a.FwVer)
	field(dev, "node_guid", "%s", guidString(a.NodeGUID))
	field(dev, "sys_image_guid", "%s", guidString(a.SysImageGUID))
	field(dev, "vendor_id", "0x%04x", a.VendorID)
	field(dev, "vendor_part_id", "%d", a.VendorPartID)
	field(dev, "hw_ver", "0x%X", a.HWVer)
	field(dev, "phys_port_cnt", "%d", a.PhysPortCnt)
	if verbose {
		printLimits(field, dev, a)
	}
	pa, err := d.QueryPort(1)
	if err != nil {
		return fmt.Errorf("%s: query port 1: %w", e.spec, err)
	}
	fmt.Fprintf(w, "\t\tport:\t1\n")
	field(port, "state", "%s", portState(pa.State))
	field(port, "max_mtu", "%d (%d)", pa.MaxMTU.Bytes(), pa.MaxMTU)
	field(port, "active_mtu", "%d (%d)", pa.ActiveMTU.Bytes(), pa.ActiveMTU)
	field(port, "link_mtu", "%d", pa.LinkMTU)
	field(port, "sm_lid", "0")
	field(port, "port_lid", "0")
	field(port, "port_lmc", "0x00")
	field(port, "link_layer", "%s", linkLayer(pa.LinkLayer))
	if verbose {
		field(port, "max_msg_sz", "0x%x", pa.MaxMsgSize)
		field(port, "pkey_tbl_len", "%d", pa.PKeyTblLen)
		field(port, "gid_tbl_len", "%d", pa.GIDTblLen)
		field(port, "phys_state", "%s", physState(pa.PhysState))
	}
	typ := ", RoCE v2"
	if e.spec.Backend == ibv.BackendVerbs || a.Transport == verbs.TransportIWARP {
		typ = "" // ibv_devinfo names the GID type of RoCE ports only
	}
	for i, g := range d.GIDs() {
		if !g.IsValid() || g.IsUnspecified() {
			continue
		}
		field(port, fmt.Sprintf("GID[%3d]", i), "%s%s (%s)", gidString(g), typ, g.Unmap())
	}
	return nil
}

// printLimits prints ibv_devinfo -v's device limits.
func printLimits(field func(indent, name, format string, v ...any), in string, a verbs.DeviceAttr) {
	field(in, "max_mr_size", "0x%x", a.MaxMRSize)
	field(in, "page_size_cap", "0x%x", a.PageSizeCap)
	field(in, "max_qp", "%d", a.MaxQP)
	field(in, "max_qp_wr", "%d", a.MaxQPWR)
	field(in, "device_cap_flags", "0x%08x", uint32(a.DeviceCapFlags))
	field(in, "max_sge", "%d", a.MaxSGE)
	field(in, "max_sge_rd", "%d", a.MaxSGERd)
	field(in, "max_cq", "%d", a.MaxCQ)
	field(in, "max_cqe", "%d", a.MaxCQE)
	field(in, "max_mr", "%d", a.MaxMR)
	field(in, "max_pd", "%d", a.MaxPD)
	field(in, "max_qp_rd_atom", "%d", a.MaxQPRdAtom)
	field(in, "max_res_rd_atom", "%d", a.MaxResRdAtom)
	field(in, "max_qp_init_rd_atom", "%d", a.MaxQPInitRdAtom)
	field(in, "atomic_cap", "%s (%d)", a.AtomicCap, a.AtomicCap)
	field(in, "max_mw", "%d", a.MaxMW)
	field(in, "max_mcast_grp", "%d", a.MaxMcastGrp)
	field(in, "max_mcast_qp_attach", "%d", a.MaxMcastQPAttach)
	field(in, "max_total_mcast_qp_attach", "%d", a.MaxTotalMcastQPAttach)
	field(in, "max_ah", "%d", a.MaxAH)
	field(in, "max_srq", "%d", a.MaxSRQ)
	field(in, "max_srq_wr", "%d", a.MaxSRQWR)
	field(in, "max_srq_sge", "%d", a.MaxSRQSGE)
	field(in, "max_pkeys", "%d", a.MaxPKeys)
	field(in, "local_ca_ack_delay", "%d", a.LocalCAAckDelay)
	field(in, "max_inline_data", "%d", a.MaxInlineData)
	field(in, "max_msg_sz", "0x%x", a.MaxMsgSize)
}

// guidString prints a GUID as ibv_devinfo does: four groups of four hex
// digits.
func guidString(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48, g>>32&0xffff, g>>16&0xffff, g&0xffff)
}

// gidString prints a GID as ibv_devinfo does: eight groups of four hex
// digits.
func gidString(g netip.Addr) string {
	b := g.As16()
	s := ""
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			s += ":"
		}
		s += fmt.Sprintf("%02x%02x", b[i], b[i+1])
	}
	return s
}

func portState(s verbs.PortState) string {
	name := map[verbs.PortState]string{verbs.PortDown: "PORT_DOWN", verbs.PortInit: "PORT_INIT",
		verbs.PortArmed: "PORT_ARMED", verbs.PortActive: "PORT_ACTIVE"}[s]
	if name == "" {
		name = "invalid state"
	}
	return fmt.Sprintf("%s (%d)", name, s)
}

func linkLayer(l verbs.LinkLayer) string {
	switch l {
	case verbs.LinkLayerEthernet:
		return "Ethernet"
	case verbs.LinkLayerInfiniBand:
		return "InfiniBand"
	}
	return fmt.Sprintf("Unknown (%d)", l)
}

func physState(s uint8) string {
	if s == verbs.PhysStateLinkUp {
		return "LINK_UP (5)"
	}
	return fmt.Sprintf("%d", s)
}
