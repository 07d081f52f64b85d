// Command line → configuration: the flags of the first device, the
// --device specs of the others (rnic NICs on a TAP or on UDP, or
// libibverbs devices served as they are), the control socket and the
// per-client limits, and the checks that need no system call.

package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/server"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/tap"
	"github.com/rnic/rnic/transport"
)

// deviceSpec is one NIC to run: its tapnic configuration (TAP mode) or its
// UDP address (embedded mode), less the pcap writer, which run creates
// from PcapPath once the whole command line is known to be good.
type deviceSpec struct {
	tapnic.Config
	// UDP, if valid, makes the NIC an embedded one on kernel UDP at this
	// address and port (no TAP, no root); Config then holds only Name
	// and MTU.
	UDP netip.AddrPort
	// TCP, if valid, makes the NIC an iWARP one on kernel TCP at this
	// address (no TAP, no root), its rdma_cm MPA; Config then holds only
	// Name.
	TCP netip.Addr
	// IWARP makes a TAP-mode NIC an iWARP one (transport=iwarp): RDMAP,
	// DDP and MPA over the NIC's own TCP on the TAP, connected through
	// its rdma_cm. A TCP NIC is always iWARP; a UDP NIC never.
	IWARP bool
	// Verbs, if set, is a libibverbs device (rxe0, mlx5_0) to serve
	// instead of an rnic NIC; Config then holds only its Name, the
	// same.
	Verbs    string
	PcapPath string
	// NoLoopback sends a UDP NIC's frames for another NIC of this rnicd
	// through the kernel too (--no-loopback), as between processes.
	NoLoopback bool
}

// options is the whole command line.
type options struct {
	devices []deviceSpec
	// socket is the control socket; empty serves no clients.
	socket string
	limits server.Limits
	// noLoopback is --no-loopback, copied into every spec.
	noLoopback bool
	// tenants are the --tenant sockets (tenants.go); tenantSpecs the
	// flags' text.
	tenants     []tenantSpec
	tenantSpecs []string
	// perNIC is --tenant-per-nic's keys ("" when not given, perNICAlone
	// when given alone).
	perNIC string
}

// errHelp is returned by parseArgs for --help.
var errHelp = pflag.ErrHelp

// deviceKeys are the keys of a --device spec, which are also the flags of
// the first device.
var deviceKeys = []string{"name", "tap", "udp", "tcp", "verbs", "transport", "ip", "ip6", "mac", "mtu", "pcap", "netns", "bridge"}

// tapOnlyKeys are the keys that mean nothing for a UDP NIC.
var tapOnlyKeys = []string{"ip", "ip6", "mac", "netns", "bridge"}

// newFlagSet declares rnicd's flags; device values land in first (keyed
// like a --device spec) and devices, the rest in opts.
func newFlagSet(first map[string]*string, devices *[]string, opts *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("rnicd", pflag.ContinueOnError)
	// pflag prints the usage itself on --help before returning ErrHelp;
	// run prints it once, on stdout.
	fs.SetOutput(io.Discard)
	help := map[string]string{
		"name":      "RDMA device name of the first NIC (default rnic0)",
		"tap":       "TAP interface of the first NIC: attached if it exists, created (and removed on exit) if not",
		"udp":       "instead of a TAP, an embedded NIC on kernel UDP at ADDR[:PORT] (an address of this host, e.g. 127.0.0.2; port 4791): no root needed",
		"tcp":       "instead of a TAP, an iWARP NIC on kernel TCP at ADDR (an address of this host, e.g. 127.0.0.2; its listeners take the ports programs ask for): no root needed",
		"verbs":     "instead of an rnic NIC, serve the libibverbs device NAME (rxe0, mlx5_0) under its own name, as clients would open it with verbs:NAME (rnicd built with -tags verbs)",
		"transport": "the TAP NIC's transport: roce (RoCEv2 on UDP 4791, the default) or iwarp (RDMAP/DDP/MPA over the NIC's own TCP, transport iWARP, node type RNIC, connected only through rdma_cm)",
		"ip":        "the NIC's IPv4 address with its on-link prefix, e.g. 10.77.0.50/24",
		"ip6":       "the NIC's IPv6 address with its on-link prefix, e.g. fd00:77::50/64",
		"mac":       "the NIC's MAC address (default: derived from its first address)",
		"mtu":       "Ethernet MTU of the NIC and its TAP, 576..9000 (default 1500)",
		"pcap":      "write every frame in and out of the TAP to this pcap file",
		"netns":     "network namespace (ip netns name) the TAP lives in",
		"bridge":    "bridge (in --netns) to enslave the TAP to",
	}
	for _, k := range deviceKeys {
		first[k] = fs.String(k, "", help[k])
	}
	first["faults"] = fs.String("faults", "", faultsFlagHelp)
	fs.StringArrayVar(devices, "device", nil,
		"another NIC: 'name=rnic1,tap=t1,ip=CIDR,ip6=CIDR,mac=MAC,mtu=N,pcap=FILE,netns=NS,bridge=BR,transport=roce|iwarp', 'name=rnic1,udp=ADDR[:PORT],mtu=N,pcap=FILE', 'name=rnic1,tcp=ADDR,pcap=FILE' (iWARP) or 'verbs=rxe0' (repeatable); a tap or udp NIC also takes the keys of --faults (loss=0.01,seed=7,...)")
	fs.BoolVar(&opts.noLoopback, "no-loopback", false,
		"send the frames between two UDP NICs of this rnicd through kernel sockets too, as between processes, instead of handing them over in memory")
	fs.StringArrayVar(&opts.tenantSpecs, "tenant", nil, tenantHelp)
	fs.StringVar(&opts.perNIC, "tenant-per-nic", "", perNICHelp)
	fs.Lookup("tenant-per-nic").NoOptDefVal = perNICAlone
	d := server.DefaultLimits()
	fs.StringVar(&opts.socket, "socket", ibv.DefaultSocketPath(),
		"serve the NICs to local processes on this Unix socket (mode 0600; its directory is created 0700); empty: serve none")
	fs.IntVar(&opts.limits.MaxClients, "max-clients", d.MaxClients, "clients (connections) served at once; more are refused")
	fs.IntVar(&opts.limits.MaxClientsPerUID, "max-clients-per-uid", d.MaxClientsPerUID, "clients (connections) of one user served at once; more are refused")
	fs.IntVar(&opts.limits.MaxQPs, "max-qps", d.MaxQPs, "QPs one client may have")
	fs.IntVar(&opts.limits.MaxMRs, "max-mrs", d.MaxMRs, "MRs one client may have")
	fs.Uint64Var(&opts.limits.MaxMRBytes, "max-mr-bytes", d.MaxMRBytes, "bytes of memory one client may register (whole memfds count)")
	fs.Uint64Var(&opts.limits.MaxRingBytes, "max-ring-bytes", d.MaxRingBytes, "bytes of queue rings (QPs, SRQs, CQs) one client may have")
	fs.IntVar(&opts.limits.MaxObjects, "max-objects", d.MaxObjects, "PDs, CQs, SRQs, AHs and MWs one client may have, together")
	fs.IntVar(&opts.limits.MaxMRsPerUID, "max-mrs-per-uid", d.MaxMRsPerUID, "MRs all clients of one user may have, together")
	fs.Uint64Var(&opts.limits.MaxMappedBytesPerUID, "max-mapped-bytes-per-uid", d.MaxMappedBytesPerUID, "bytes of registered memory and queue rings all clients of one user may have the daemon map, together")
	fs.IntVar(&opts.limits.MaxMappings, "max-mappings", d.MaxMappings, "MRs all clients may have, together (default: half of vm.max_map_count)")
	fs.Uint64Var(&opts.limits.MaxMappedBytes, "max-mapped-bytes", d.MaxMappedBytes, "bytes of registered memory and queue rings the daemon maps for all clients, together")
	fs.Uint64Var(&opts.limits.MaxQueueBytesPerUID, "max-queue-bytes-per-uid", d.MaxQueueBytesPerUID, "bytes of the daemon's memory for the queues (per-WR state) of the QPs of one user's clients, together")
	fs.Uint64Var(&opts.limits.MaxQueueBytes, "max-queue-bytes", d.MaxQueueBytes, "bytes of the daemon's memory for the queues of all clients' QPs, together")
	return fs
}

// parseArgs turns the command line into options with one spec per NIC,
// or an error (errHelp for --help). It checks everything that can be
// checked without touching the system: syntax, ranges, and that no two
// NICs share a name, a TAP, a UDP address or a pcap file.
func parseArgs(args []string) (*options, error) {
	first := map[string]*string{}
	var devices []string
	opts := &options{}
	fs := newFlagSet(first, &devices, opts)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, l := range []struct {
		flag string
		v    uint64
	}{{"--max-clients", uint64(opts.limits.MaxClients)}, {"--max-clients-per-uid", uint64(opts.limits.MaxClientsPerUID)},
		{"--max-qps", uint64(opts.limits.MaxQPs)}, {"--max-mrs", uint64(opts.limits.MaxMRs)},
		{"--max-mr-bytes", opts.limits.MaxMRBytes}, {"--max-ring-bytes", opts.limits.MaxRingBytes},
		{"--max-objects", uint64(opts.limits.MaxObjects)}, {"--max-mrs-per-uid", uint64(opts.limits.MaxMRsPerUID)},
		{"--max-mapped-bytes-per-uid", opts.limits.MaxMappedBytesPerUID}, {"--max-mappings", uint64(opts.limits.MaxMappings)},
		{"--max-mapped-bytes", opts.limits.MaxMappedBytes}, {"--max-queue-bytes-per-uid", opts.limits.MaxQueueBytesPerUID},
		{"--max-queue-bytes", opts.limits.MaxQueueBytes}} {
		if l.v == 0 || l.v > 1<<62 {
			return nil, fmt.Errorf("%s must be positive", l.flag)
		}
	}

	kv := map[string]string{}
	for _, k := range deviceKeys {
		if fs.Changed(k) {
			kv[k] = *first[k]
		}
	}
	if fs.Changed("faults") {
		if len(kv) == 0 {
			return nil, errors.New("--faults applies to the first device: give its --tap or --udp too")
		}
		if err := mergeFaultsFlag(kv, *first["faults"]); err != nil {
			return nil, err
		}
	}
	if len(kv) > 0 {
		_, isTAP := kv["tap"]
		_, isUDP := kv["udp"]
		_, isTCP := kv["tcp"]
		_, isVerbs := kv["verbs"]
		if !isTAP && !isUDP && !isTCP && !isVerbs {
			return nil, errors.New("--tap, --udp or --tcp is required with the first device's flags (--ip, --mac, ...), or --verbs")
		}
		s, err := specFromKeys(kv, "rnic0", "--")
		if err != nil {
			return nil, err
		}
		opts.devices = append(opts.devices, s)
	}
	for _, d := range devices {
		kv, err := splitDeviceSpec(d)
		if err != nil {
			return nil, fmt.Errorf("--device %q: %w", d, err)
		}
		s, err := specFromKeys(kv, fmt.Sprintf("rnic%d", len(opts.devices)), "")
		if err != nil {
			return nil, fmt.Errorf("--device %q: %w", d, err)
		}
		opts.devices = append(opts.devices, s)
	}
	if len(opts.devices) == 0 {
		return nil, errors.New("no device: give --tap and --ip/--ip6, --udp, --tcp, --verbs, or --device")
	}
	if err := checkDistinct(opts.devices); err != nil {
		return nil, err
	}
	for i := range opts.devices {
		opts.devices[i].NoLoopback = opts.noLoopback
	}
	for _, spec := range opts.tenantSpecs {
		t, err := parseTenant(spec, opts.socket)
		if err != nil {
			return nil, fmt.Errorf("--tenant %q: %w", spec, err)
		}
		opts.tenants = append(opts.tenants, t)
	}
	if err := opts.addPerNIC(); err != nil {
		return nil, err
	}
	if err := checkTenants(opts.tenants, opts.devices, opts.socket); err != nil {
		return nil, fmt.Errorf("--tenant: %w", err)
	}
	return opts, nil
}

// splitDeviceSpec splits "k=v,k=v" into its keys, refusing unknown,
// repeated and empty ones.
func splitDeviceSpec(s string) (map[string]string, error) {
	kv := map[string]string{}
	for field := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(field, "=")
		k = strings.TrimSpace(k)
		switch {
		case !ok:
			return nil, fmt.Errorf("%q is not key=value", field)
		case !isDeviceKey(k) && !transport.IsFaultKey(k):
			return nil, fmt.Errorf("unknown key %q (keys: %s; faults: %s)", k, strings.Join(deviceKeys, ", "),
				strings.Join(transport.FaultKeys, ", "))
		case v == "":
			return nil, fmt.Errorf("empty %s", k)
		}
		if _, dup := kv[k]; dup {
			return nil, fmt.Errorf("%s given twice", k)
		}
		kv[k] = v
	}
	_, isTAP := kv["tap"]
	_, isUDP := kv["udp"]
	_, isTCP := kv["tcp"]
	_, isVerbs := kv["verbs"]
	if !isTAP && !isUDP && !isTCP && !isVerbs {
		return nil, errors.New("tap=, udp= or tcp= is required (or verbs=)")
	}
	return kv, nil
}

func isDeviceKey(k string) bool {
	for _, d := range deviceKeys {
		if k == d {
			return true
		}
	}
	return false
}

// specFromKeys builds a spec from validated key syntax; defaultName is the
// NIC name when name is absent. flagPrefix ("--" or "") makes errors name
// the key the way the user wrote it.
func specFromKeys(kv map[string]string, defaultName, flagPrefix string) (deviceSpec, error) {
	key := func(k string) string {
		if flagPrefix != "" {
			return flagPrefix + k
		}
		return k + "="
	}
	faults, err := takeFaults(kv)
	if err != nil {
		return deviceSpec{}, err
	}
	if faults != nil && kv["tap"] == "" && kv["udp"] == "" {
		return deviceSpec{}, fmt.Errorf("faults apply to a NIC on %s or %s (frames on a wire); not to %s or %s",
			key("tap"), key("udp"), key("tcp"), key("verbs"))
	}
	s, err := nicSpecFromKeys(kv, defaultName, key)
	s.Faults = faults
	return s, err
}

// nicSpecFromKeys is specFromKeys without the fault keys.
func nicSpecFromKeys(kv map[string]string, defaultName string, key func(string) string) (deviceSpec, error) {
	if v, ok := kv["verbs"]; ok {
		return verbsSpecFromKeys(kv, v, key)
	}
	tr, err := transportOf(kv, key)
	if err != nil {
		return deviceSpec{}, err
	}
	if v, ok := kv["tcp"]; ok {
		if tr == transportRoCE {
			return deviceSpec{}, fmt.Errorf("%s: a NIC on %s is an iWARP one", key("transport"), key("tcp"))
		}
		return tcpSpecFromKeys(kv, v, defaultName, key)
	}
	if v, ok := kv["udp"]; ok {
		if tr == transportIWARP {
			return deviceSpec{}, fmt.Errorf("%s: a NIC on %s is a RoCEv2 one (iWARP: %s, or %s with transport iwarp)",
				key("transport"), key("udp"), key("tcp"), key("tap"))
		}
		return udpSpecFromKeys(kv, v, defaultName, key)
	}
	s := deviceSpec{Config: tapnic.Config{
		Name:   kv["name"],
		TAP:    kv["tap"],
		Netns:  kv["netns"],
		Bridge: kv["bridge"],
	}, PcapPath: kv["pcap"], IWARP: tr == transportIWARP}
	if s.Name == "" {
		s.Name = defaultName
	}
	if err := checkIfName(s.TAP); err != nil {
		return s, fmt.Errorf("%s: %w", key("tap"), err)
	}
	if s.Bridge != "" {
		if err := checkIfName(s.Bridge); err != nil {
			return s, fmt.Errorf("%s: %w", key("bridge"), err)
		}
	}
	if v, ok := kv["ip"]; ok {
		p, err := parseHostPrefix(v, false)
		if err != nil {
			return s, fmt.Errorf("%s: %w", key("ip"), err)
		}
		s.Prefixes = append(s.Prefixes, p)
	}
	if v, ok := kv["ip6"]; ok {
		p, err := parseHostPrefix(v, true)
		if err != nil {
			return s, fmt.Errorf("%s: %w", key("ip6"), err)
		}
		s.Prefixes = append(s.Prefixes, p)
	}
	if len(s.Prefixes) == 0 {
		return s, fmt.Errorf("%s needs %s and/or %s", s.Name, key("ip"), key("ip6"))
	}
	if v, ok := kv["mac"]; ok {
		mac, err := parseMAC(v)
		if err != nil {
			return s, fmt.Errorf("%s: %w", key("mac"), err)
		}
		s.MAC = mac
	}
	if v, ok := kv["mtu"]; ok {
		mtu, err := strconv.Atoi(v)
		if err != nil || mtu < tap.MinDeviceMTU || mtu > tap.MaxDeviceMTU {
			return s, fmt.Errorf("%s: %q is not an MTU in %d..%d", key("mtu"), v, tap.MinDeviceMTU, tap.MaxDeviceMTU)
		}
		s.MTU = mtu
	}
	return s, nil
}

// The values of the transport key.
const (
	transportRoCE  = "roce"
	transportIWARP = "iwarp"
)

// transportOf returns the spec's transport key: transportRoCE,
// transportIWARP, or "" when it is not given.
func transportOf(kv map[string]string, key func(string) string) (string, error) {
	v, ok := kv["transport"]
	if !ok {
		return "", nil
	}
	switch t := strings.ToLower(v); t {
	case transportRoCE, transportIWARP:
		return t, nil
	}
	return "", fmt.Errorf("%s: %q is not a transport (roce or iwarp)", key("transport"), v)
}

// udpSpecFromKeys builds the spec of an embedded NIC on kernel UDP.
func udpSpecFromKeys(kv map[string]string, addr, defaultName string, key func(string) string) (deviceSpec, error) {
	s := deviceSpec{Config: tapnic.Config{Name: kv["name"]}, PcapPath: kv["pcap"]}
	if s.Name == "" {
		s.Name = defaultName
	}
	if _, ok := kv["tap"]; ok {
		return s, fmt.Errorf("%s and %s: a NIC is on a TAP or on UDP, not both", key("tap"), key("udp"))
	}
	for _, k := range tapOnlyKeys {
		if _, ok := kv[k]; ok {
			return s, fmt.Errorf("%s is for TAP-mode NICs; a UDP NIC has the address of %s", key(k), key("udp"))
		}
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		a, aerr := netip.ParseAddr(addr)
		if aerr != nil {
			return s, fmt.Errorf("%s: %q is not ADDR or ADDR:PORT", key("udp"), addr)
		}
		ap = netip.AddrPortFrom(a, 0)
	}
	if a := ap.Addr(); a.IsUnspecified() || a.IsMulticast() || a.Zone() != "" || a.Is4In6() {
		return s, fmt.Errorf("%s: %v cannot be a NIC's address", key("udp"), a)
	}
	s.UDP = ap
	if v, ok := kv["mtu"]; ok {
		mtu, err := strconv.Atoi(v)
		if err != nil || mtu < tap.MinDeviceMTU || mtu > tap.MaxDeviceMTU {
			return s, fmt.Errorf("%s: %q is not an MTU in %d..%d", key("mtu"), v, tap.MinDeviceMTU, tap.MaxDeviceMTU)
		}
		s.MTU = mtu
	}
	return s, nil
}

// tcpSpecFromKeys builds the spec of an iWARP NIC on kernel TCP: a name,
// an address and a pcap file are all it takes (the kernel sizes its
// segments).
func tcpSpecFromKeys(kv map[string]string, addr, defaultName string, key func(string) string) (deviceSpec, error) {
	s := deviceSpec{Config: tapnic.Config{Name: kv["name"]}, PcapPath: kv["pcap"]}
	if s.Name == "" {
		s.Name = defaultName
	}
	for k := range kv {
		if k != "name" && k != "tcp" && k != "pcap" && k != "transport" {
			return s, fmt.Errorf("%s does not apply to an iWARP NIC on %s (name, tcp and pcap do)", key(k), key("tcp"))
		}
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return s, fmt.Errorf("%s: %q is not an address (its listeners choose their ports)", key("tcp"), addr)
	}
	if a.IsUnspecified() || a.IsMulticast() || a.Zone() != "" || a.Is4In6() {
		return s, fmt.Errorf("%s: %v cannot be a NIC's address", key("tcp"), a)
	}
	s.TCP = a
	return s, nil
}

// parseHostPrefix parses the NIC's own address with its on-link prefix:
// IPv4 for --ip, IPv6 for --ip6, and an address a host can have.
func parseHostPrefix(v string, want6 bool) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(v)
	if err != nil {
		return p, fmt.Errorf("%q is not an address/prefix-length (CIDR): %w", v, err)
	}
	a := p.Addr()
	switch {
	case want6 && !a.Is6():
		return p, fmt.Errorf("%s is not an IPv6 address", v)
	case want6 && a.Is4In6():
		return p, fmt.Errorf("%s is IPv4-mapped; give it with --ip", v)
	case !want6 && !a.Is4():
		return p, fmt.Errorf("%s is not an IPv4 address", v)
	case a.Zone() != "":
		return p, fmt.Errorf("%s has a zone", v)
	case a.IsUnspecified() || a.IsMulticast() || a.IsLoopback() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return p, fmt.Errorf("%s cannot be a NIC's address", v)
	case a.Is4() && p.IsSingleIP():
		// The prefix says which peers are on-link: a /32 has none.
		return p, fmt.Errorf("%s: give the on-link prefix (e.g. /24)", v)
	}
	return p, nil
}

// parseMAC parses an EUI-48 unicast address.
func parseMAC(v string) ([6]byte, error) {
	var mac [6]byte
	hw, err := net.ParseMAC(v)
	if err != nil {
		return mac, err
	}
	if len(hw) != 6 {
		return mac, fmt.Errorf("%s is not a 6-byte Ethernet address", v)
	}
	copy(mac[:], hw)
	if mac == ([6]byte{}) || mac[0]&1 != 0 {
		return mac, fmt.Errorf("%s is not a unicast address", v)
	}
	return mac, nil
}

// checkIfName catches the interface names the kernel would refuse, so the
// user learns at once rather than from a failed open.
func checkIfName(name string) error {
	switch {
	case name == "":
		return errors.New("empty interface name")
	case len(name) > tap.MaxDeviceNameLen:
		return fmt.Errorf("interface name %q longer than %d bytes", name, tap.MaxDeviceNameLen)
	case strings.ContainsAny(name, "/: \t\n"):
		return fmt.Errorf("interface name %q contains '/', ':' or white space", name)
	}
	return nil
}

// checkDistinct refuses two NICs with one name, one TAP (in one
// namespace), one UDP address or one pcap file.
func checkDistinct(specs []deviceSpec) error {
	names := map[string]bool{}
	taps := map[[2]string]bool{}
	udps := map[netip.AddrPort]bool{}
	tcps := map[netip.Addr]bool{}
	pcaps := map[string]bool{}
	for _, s := range specs {
		if names[s.Name] {
			return fmt.Errorf("two NICs are named %s", s.Name)
		}
		names[s.Name] = true
		if s.Verbs != "" {
			continue // its name is the device's: one device, one name
		}
		if s.TCP.IsValid() {
			if tcps[s.TCP] {
				return fmt.Errorf("two iWARP NICs on TCP %v", s.TCP)
			}
			tcps[s.TCP] = true
		} else if s.UDP.IsValid() {
			if udps[s.UDP] {
				return fmt.Errorf("two NICs on UDP %v", s.UDP)
			}
			udps[s.UDP] = true
		} else {
			k := [2]string{s.Netns, s.TAP}
			if taps[k] {
				return fmt.Errorf("two NICs on TAP %s", s.TAP)
			}
			taps[k] = true
		}
		if s.PcapPath != "" {
			if pcaps[s.PcapPath] {
				return fmt.Errorf("two NICs write pcap %s", s.PcapPath)
			}
			pcaps[s.PcapPath] = true
		}
	}
	return nil
}
