// The table of pairings: every real tool the lab's guests run (rdma-core's
// ibv_rc_pingpong, ibv_ud_pingpong and rping, perftest's ib_*_bw and
// ib_*_lat) against its rnic counterpart, each in both roles. The commands
// are those of the lab's golden captures (lab/captures.sh), so a row can
// be compared frame by frame with the capture of the same command between
// two guests. Then the passthrough backend: rnic
// built with -tags verbs runs in a guest on its rxe or siw device, against
// rnic in the TAP mode, and the backend's own tests run in the guests.

package main

import (
	"fmt"
	"regexp"
	"strings"
)

// Guest is one kind of lab guest: its RDMA device and Ethernet MTU, the
// guest name and address it has in this harness, and the TAP and address
// rnic takes on the bridge to face it.
type Guest struct {
	Kind    string // rxe, rxe9000, siw, siwcrc
	Name    string // vm.sh guest name
	Addr    string // the guest's IPv4 address
	Opts    []string
	TAP     string // rnic's TAP
	RnicIP  string // rnic's IPv4 address
	EthMTU  int
	IWARP   bool
	Timeout int // seconds a run may take (TCG is slow)
}

// Guests are this harness's lab identity (lab.md: guests I1..I9 on
// 10.77.0.21-29, rnic on 10.77.0.61-69 with TAPs tap-i1..tap-i9).
var Guests = map[string]*Guest{
	"rxe":     {Kind: "rxe", Name: "I1", Addr: "10.77.0.21", Opts: []string{"--rdma", "rxe"}, TAP: "tap-i1", RnicIP: "10.77.0.61", EthMTU: 1500},
	"siw":     {Kind: "siw", Name: "I2", Addr: "10.77.0.22", Opts: []string{"--rdma", "siw"}, TAP: "tap-i2", RnicIP: "10.77.0.62", EthMTU: 1500, IWARP: true},
	"rxe9000": {Kind: "rxe9000", Name: "I3", Addr: "10.77.0.23", Opts: []string{"--rdma", "rxe", "--mtu", "9000"}, TAP: "tap-i3", RnicIP: "10.77.0.63", EthMTU: 9000},
	"siwcrc":  {Kind: "siwcrc", Name: "I4", Addr: "10.77.0.24", Opts: []string{"--rdma", "siw", "--siwcrc"}, TAP: "tap-i4", RnicIP: "10.77.0.64", EthMTU: 1500, IWARP: true},
}

// Role says which side rnic plays in a row.
type Role int

const (
	// RnicServer: rnic serves, the real tool in the guest is the client.
	RnicServer Role = iota
	// RnicClient: the real tool in the guest serves, rnic is the client.
	RnicClient
	// GuestTests: a Tests pairing's plain test binary.
	GuestTests
	// GuestTestsRace: a Tests pairing's -race test binary.
	GuestTestsRace
)

func (r Role) String() string {
	switch r {
	case RnicServer:
		return "rnic server"
	case RnicClient:
		return "rnic client"
	case GuestTests:
		return "tests"
	default:
		return "tests -race"
	}
}

// Pairing is one tool against its rnic counterpart. Commands are
// templates: {self} is the side's own address, {server} the server's.
type Pairing struct {
	Name  string
	Guest string // key of Guests
	// GuestServer and GuestClient are the real tool's command lines.
	GuestServer, GuestClient string
	// RnicServer and RnicClient are rnic's arguments (its TAP flags are
	// added by the harness).
	RnicServer, RnicClient string
	// ListenPort is the TCP port the guest's server listens on once it is
	// ready (0: it has none the kernel shows, wait a fixed time).
	ListenPort int
	// CMPort is the rdma_cm port the guest's server listens on when the
	// kernel shows no socket for it (rdma_cm on rxe): the guest's
	// `rdma res show cm_id` lists its LISTEN id.
	CMPort int
	// Verbs says the guest's tool is rnic built with -tags verbs
	// (guestVerbsRnic), on the guest's device through libibverbs.
	Verbs bool
	// Dropin says rnic's side is an unmodified C program (Debian's
	// ibv_rc_pingpong, ib_write_bw) on rnicd's TAP NIC through the drop-in
	// libibverbs.so.1: RnicServer and RnicClient are then that program's
	// command lines, run with rnic exec in the lab's namespace: in rnic
	// exec's view, whose interface is the NIC's host port, so that its
	// side channel, like its RDMA, is at the NIC's address (RnicIP).
	Dropin bool
	// CM says a Dropin row's program connects through rdma_cm (the
	// drop-in librdmacm.so.1): it addresses rnicd's NIC by the NIC's own
	// address (RnicIP), where its listener is, and rnicd's NIC speaks the
	// guest's transport (iWARP on its TAP's own TCP for siw).
	CM bool
	// ReadyLog, for a Dropin row whose rnic-side server neither listens
	// on a socket nor through rdma_cm (mckey's receiver joins a group),
	// is what its log says once it is ready for the guest's client; the
	// program runs line-buffered (stdbuf) so the log shows it at once.
	ReadyLog string
	// Tests makes the pairing a test run instead: nic/passthrough's test
	// binary (-tags verbs) in the guest, on its rxe or siw device, with no
	// rnic on the bridge. Its rows are the plain and the -race binary.
	Tests bool
	// Fault is the netem setting on the guest's egress for this
	// pairing's rows (faults.go); nil on a clean wire.
	Fault *Fault
	// RnicFaults puts the same fault on rnic's egress too (its
	// --faults, Fault.Rnic).
	RnicFaults bool
}

// Files the harness copies into a guest's /lab (vm.sh's share) for the
// passthrough rows.
const (
	verbsRnicFile = "rnic-verbs"
	testFile      = "passthrough.test"
	raceTestFile  = "passthrough.race.test"
	// guestVerbsRnic is rnic built with -tags verbs, as the guest runs it.
	guestVerbsRnic = "/lab/" + verbsRnicFile
	// guestTestLimit bounds one test binary's run in the guest (both
	// guests take under a minute under TCG).
	guestTestLimit = 300
)

// Row is one pairing in one role.
type Row struct {
	*Pairing
	Role Role
}

// Label is the row's name and role, what --only matches.
func (r Row) Label() string { return r.Name + " / " + r.Role.String() }

// expand substitutes a command template.
func expand(tmpl, self, server string) string {
	return strings.NewReplacer("{self}", self, "{server}", server).Replace(tmpl)
}

// GuestCommand is the real tool's command line in this row.
func (r Row) GuestCommand() string {
	g := Guests[r.Guest]
	switch r.Role {
	case GuestTests, GuestTestsRace:
		bin := testFile
		if r.Role == GuestTestsRace {
			bin = raceTestFile
		}
		return fmt.Sprintf("cd /lab && ./%s -test.v -test.count 1 -test.timeout %ds", bin, guestTestLimit-10)
	}
	if r.Role == RnicClient {
		return expand(r.GuestServer, g.Addr, g.Addr)
	}
	// A drop-in program runs in rnic exec's view, whose interface is
	// its NIC's host port: its side channel, like its RDMA, is at
	// rnicd's NIC's address, as a program's on rxe is at its port's.
	return expand(r.GuestClient, g.Addr, g.RnicIP)
}

// RnicArgs is rnic's command line in this row, TAP flags and capture
// included; nil for a Tests row, which runs no rnic.
func (r Row) RnicArgs(pcap string) []string {
	if r.Tests || r.Dropin {
		return nil
	}
	g := Guests[r.Guest]
	var tmpl, server string
	if r.Role == RnicServer {
		tmpl, server = r.RnicServer, g.RnicIP
	} else {
		tmpl, server = r.RnicClient, g.Addr
	}
	args := strings.Fields(expand(tmpl, g.RnicIP, server))
	// Flags go before the trailing server address (pflag takes them
	// anywhere, but a reader of the log expects them first).
	tap := []string{"--netns", labNetns, "--bridge", labBridge, "--tap", g.TAP,
		"--ip", g.RnicIP + "/24", "--pcap", pcap}
	if g.EthMTU != 1500 {
		tap = append(tap, "--tap-mtu", fmt.Sprint(g.EthMTU))
	}
	if r.Fault != nil {
		// Its timeouts and the NAKs it gets, counted from the log
		// (rnicTrace).
		tap = append(tap, "--trace")
	}
	if r.RnicFaults {
		tap = append(tap, "--faults", rnicFaultSpec(r.Fault))
	}
	return append(args[:1:1], append(tap, args[1:]...)...)
}

// RnicdArgs is the command line of the rnicd a Dropin row runs: one rnic
// NIC, rnic0, on the row's TAP, serving sock and capturing into pcap.
func (r Row) RnicdArgs(pcap, sock string) []string {
	g := Guests[r.Guest]
	args := []string{"--name", dropinDevice, "--tap", g.TAP, "--ip", g.RnicIP + "/24",
		"--netns", labNetns, "--bridge", labBridge, "--pcap", pcap, "--socket", sock}
	if g.EthMTU != 1500 {
		args = append(args, "--mtu", fmt.Sprint(g.EthMTU))
	}
	if g.IWARP {
		args = append(args, "--transport", "iwarp")
	}
	return args
}

// ProgramArgs is a Dropin row's program with its arguments, as rnic exec
// runs it.
func (r Row) ProgramArgs() []string {
	g := Guests[r.Guest]
	self := g.RnicIP // rnicd's NIC's, which the view's host port carries
	var args []string
	if r.Role == RnicServer {
		args = strings.Fields(expand(r.RnicServer, self, self))
	} else {
		args = strings.Fields(expand(r.RnicClient, self, g.Addr))
	}
	if r.ReadyLog != "" {
		args = append([]string{"stdbuf", "-oL", "-eL"}, args...)
	}
	return args
}

// rpingPort is rping's default port.
const rpingPort = 7174

// Lab network names (lab/vm.sh defaults): the namespace, its
// bridge and the namespace's own address on it, where the side channels
// of programs run in the namespace listen (vm.sh's LAB_BR_IP).
const (
	labNetns    = "rnlab"
	labBridge   = "br0"
	labBridgeIP = "10.77.0.1"
	// dropinDevice is the RDMA device name of rnicd's NIC in Dropin rows.
	dropinDevice = "rnic0"
)

// Pairings is the whole table: every pairing of rnic with rxe and siw.
var Pairings = buildPairings()

func buildPairings() []*Pairing {
	var t table
	t.rxe()
	t.rxe9000()
	t.siw()
	t.passthrough()
	addDropin(t.add)
	t.faultRows()
	return t.ps
}

// table collects the pairings.
type table struct{ ps []*Pairing }

func (t *table) add(p *Pairing) { t.ps = append(t.ps, p) }

// pp adds a pingpong pairing: the client names the server last.
func (t *table) pp(guest, name, tool, rnic string, port int) {
	t.add(&Pairing{Name: guest + " " + name, Guest: guest,
		GuestServer: tool, GuestClient: tool + " {server}",
		RnicServer: rnic, RnicClient: rnic + " {server}", ListenPort: port})
}

// perfIters are the iterations per size, as lab/demo.sh (small: TCG
// guests are slow).
var perfIters = map[int]int{64: 100, 1024: 20, 4096: 20, 65536: 5}

// perfTools are perftest's bandwidth and latency tests with rnic perf's
// --op and --mode.
var perfTools = []struct{ tool, op, mode string }{
	{"ib_write_bw", "write", "bw"}, {"ib_read_bw", "read", "bw"}, {"ib_send_bw", "send", "bw"},
	{"ib_write_lat", "write", "lat"}, {"ib_read_lat", "read", "lat"}, {"ib_send_lat", "send", "lat"},
}

// perf adds a perftest pairing: the same flags on both sides, the client
// names the server last; rnic's side is rnic perf with perftest's flags.
// GID index 1 is the IPv4-mapped GID on both sides (index 0 is the
// link-local GID on rxe and on rnic's TAP alike); -R connects through
// rdma_cm (always on siw). extra is passed to both sides (-c UD, -A ...);
// size 0 is perftest's default (the atomics' 8 bytes).
func (t *table) perf(guest, tool, op, mode string, cm bool, extra string, size, n int) {
	g := Guests[guest]
	dev, flags, iw := "-d rxe0 -x 1 -F", "-x 1 -F", ""
	switch {
	case g.IWARP:
		dev, flags, iw = "-d siw0 -R -F", "-R -F", " --iwarp"
	case cm:
		dev, flags = "-d rxe0 -R -F", "-R -F"
	}
	name := []string{guest, tool}
	if cm && !g.IWARP {
		name = append(name, "-R")
	}
	opts := ""
	if extra != "" {
		opts = " " + extra
		name = append(name, strings.TrimPrefix(extra, "-A "))
	}
	if size > 0 {
		opts += fmt.Sprintf(" -s %d", size)
		name = append(name, fmt.Sprint(size))
	}
	opts += fmt.Sprintf(" -n %d", n)
	port, cmPort := 18515, 0
	if cm && !g.IWARP {
		port, cmPort = 0, 18515 // rdma_cm on RoCE listens on no TCP socket
	}
	tool = tool + " " + dev + opts
	rnic := fmt.Sprintf("perf%s --op %s --mode %s %s%s", iw, op, mode, flags, opts)
	t.add(&Pairing{Name: strings.Join(name, " "), Guest: guest, GuestServer: tool, GuestClient: tool + " {server}",
		RnicServer: rnic + " --serve", RnicClient: rnic + " {server}", ListenPort: port, CMPort: cmPort})
}

// rxe adds the rows against rxe at Ethernet MTU 1500: path MTU 1024.
func (t *table) rxe() {
	for _, s := range []int{64, 4096, 65536} {
		n := map[int]int{64: 10, 4096: 5, 65536: 5}[s]
		t.pp("rxe", fmt.Sprintf("rc pingpong %d", s),
			fmt.Sprintf("ibv_rc_pingpong -d rxe0 -g 1 -n %d -s %d", n, s),
			fmt.Sprintf("pingpong -g 1 -n %d -s %d", n, s), 18515)
	}
	for _, s := range []int{64, 512, 1024} {
		t.pp("rxe", fmt.Sprintf("ud pingpong %d", s),
			fmt.Sprintf("ibv_ud_pingpong -d rxe0 -g 1 -n 10 -s %d", s),
			fmt.Sprintf("pingpong --ud -g 1 -n 10 -s %d", s), 18515)
	}
	for _, p := range perfTools {
		for _, s := range []int{64, 4096, 65536} {
			t.perf("rxe", p.tool, p.op, p.mode, false, "", s, perfIters[s])
		}
	}
	for _, s := range []int{64, 1024} {
		t.perf("rxe", "ib_send_bw", "send", "bw", false, "-c UD", s, perfIters[s])
	}
	t.perf("rxe", "ib_atomic_bw", "atomic", "bw", false, "-A FETCH_AND_ADD", 0, 50)
	t.perf("rxe", "ib_atomic_bw", "atomic", "bw", false, "-A CMP_AND_SWAP", 0, 50)
	// rdma_cm on RoCEv2: CM MADs on QP1.
	t.add(&Pairing{Name: "rxe rping", Guest: "rxe",
		GuestServer: "rping -s -a {self} -v -C 10", GuestClient: "rping -c -a {server} -v -C 10",
		RnicServer: "rping -s -a {self} -C 10 -v -V", RnicClient: "rping -c -a {server} -C 10 -v -V", CMPort: rpingPort})
	t.perf("rxe", "ib_write_bw", "write", "bw", true, "", 4096, 20)
}

// rxe9000 adds the rows against rxe at Ethernet MTU 9000: path MTU 4096.
func (t *table) rxe9000() {
	t.pp("rxe9000", "rc pingpong 4096", "ibv_rc_pingpong -d rxe0 -g 1 -m 4096 -n 5 -s 4096",
		"pingpong -g 1 -m 4096 -n 5 -s 4096", 18515)
	t.pp("rxe9000", "rc pingpong 65536", "ibv_rc_pingpong -d rxe0 -g 1 -m 4096 -n 5 -s 65536",
		"pingpong -g 1 -m 4096 -n 5 -s 65536", 18515)
	t.pp("rxe9000", "ud pingpong 4096", "ibv_ud_pingpong -d rxe0 -g 1 -n 10 -s 4096",
		"pingpong --ud -g 1 -n 10 -s 4096", 18515)
	for _, p := range perfTools[:3] {
		for _, s := range []int{4096, 65536} {
			t.perf("rxe9000", p.tool, p.op, p.mode, false, "", s, perfIters[s])
		}
	}
	t.perf("rxe9000", "ib_send_bw", "send", "bw", false, "-c UD", 4096, 20)
	t.perf("rxe9000", "ib_write_lat", "write", "lat", false, "", 4096, 20)
}

// siw adds the rows against siw: iWARP through rdma_cm, MPA CRC off (siw)
// and on (siwcrc).
func (t *table) siw() {
	for _, g := range []string{"siw", "siwcrc"} {
		t.add(&Pairing{Name: g + " rping", Guest: g,
			GuestServer: "rping -s -a {self} -v -C 10", GuestClient: "rping -c -a {server} -v -C 10",
			RnicServer: "rping --iwarp -s -a {self} -C 10 -v -V", RnicClient: "rping --iwarp -c -a {server} -C 10 -v -V",
			ListenPort: 7174})
		for _, p := range perfTools {
			if p.mode == "lat" {
				t.perf(g, p.tool, p.op, p.mode, true, "", 64, 50)
				continue
			}
			for _, s := range []int{4096, 65536} {
				t.perf(g, p.tool, p.op, p.mode, true, "", s, perfIters[s])
			}
		}
	}
}

// passthrough adds the passthrough rows: rnic -d verbs:rxe0 against rnic on its
// TAP (RoCEv2, the ibv_rc_pingpong side channel), rnic rping --ib-dev
// verbs:siw0 against rnic rping --iwarp (rdma_cm over siw), and the
// backend's tests in each guest.
func (t *table) passthrough() {
	t.add(&Pairing{Name: "rxe passthrough pingpong 64", Guest: "rxe", Verbs: true,
		GuestServer: guestVerbsRnic + " pingpong -d verbs:rxe0 -g 1 -n 10 -s 64",
		GuestClient: guestVerbsRnic + " pingpong -d verbs:rxe0 -g 1 -n 10 -s 64 {server}",
		RnicServer:  "pingpong -g 1 -n 10 -s 64", RnicClient: "pingpong -g 1 -n 10 -s 64 {server}", ListenPort: 18515})
	t.add(&Pairing{Name: "siw passthrough rping", Guest: "siw", Verbs: true,
		GuestServer: guestVerbsRnic + " rping --ib-dev verbs:siw0 -s -a {self} -C 10 -v -V",
		GuestClient: guestVerbsRnic + " rping --ib-dev verbs:siw0 -c -a {server} -C 10 -v -V",
		RnicServer:  "rping --iwarp -s -a {self} -C 10 -v -V", RnicClient: "rping --iwarp -c -a {server} -C 10 -v -V",
		ListenPort: 7174})
	t.passthroughMW()
	for _, g := range []string{"rxe", "siw"} {
		t.add(&Pairing{Name: g + " passthrough tests", Guest: g, Tests: true})
	}
}

// passthroughMW adds the memory window rows: rnic perf --mw on rnic's TAP
// against rnic perf --mw -d verbs:rxe0 in the guest. Each side binds Type
// 2B windows once its QPs are in RTS and hands out their rkeys, so with
// rnic serving, rxe's WRITEs and READs go through windows rnic bound; with
// the guest serving, rnic's go through windows rxe bound. Both sides check
// the data that landed.
func (t *table) passthroughMW() {
	for _, op := range []string{"write", "read"} {
		opts := " perf --mw --op " + op + " -x 1 -s 4096 -n 20 --no-raw"
		guest := guestVerbsRnic + opts + " -d verbs:rxe0"
		t.add(&Pairing{Name: "rxe passthrough perf --mw " + op, Guest: "rxe", Verbs: true,
			GuestServer: guest + " --serve", GuestClient: guest + " {server}",
			RnicServer: opts[1:] + " --serve", RnicClient: opts[1:] + " {server}", ListenPort: 18515})
	}
}

// addDropin adds the drop-in rows: Debian's unmodified ibv_rc_pingpong and
// ib_write_bw on rnic (rnicd on its TAP, the program through the drop-in
// libibverbs.so.1) against the same tool on rxe. GID index 1 is the
// IPv4-mapped GID on both (rnicd's TAP NIC has Linux's GID table).
func addDropin(add func(*Pairing)) {
	for _, s := range []int{64, 4096} {
		n := map[int]int{64: 10, 4096: 5}[s]
		guest := fmt.Sprintf("ibv_rc_pingpong -d rxe0 -g 1 -n %d -s %d", n, s)
		rnic := fmt.Sprintf("ibv_rc_pingpong -d %s -g 1 -n %d -s %d", dropinDevice, n, s)
		add(&Pairing{Name: fmt.Sprintf("rxe drop-in rc pingpong %d", s), Guest: "rxe", Dropin: true,
			GuestServer: guest, GuestClient: guest + " {server}",
			RnicServer: rnic, RnicClient: rnic + " {server}", ListenPort: 18515})
	}
	guest := "ib_write_bw -d rxe0 -x 1 -F -s 65536 -n 5"
	rnic := "ib_write_bw -d " + dropinDevice + " -x 1 -F -s 65536 -n 5"
	add(&Pairing{Name: "rxe drop-in ib_write_bw 65536", Guest: "rxe", Dropin: true,
		GuestServer: guest, GuestClient: guest + " {server}",
		RnicServer: rnic, RnicClient: rnic + " {server}", ListenPort: 18515})
	addDropinCM(add)
	addDropinMcast(add)
}

// mckeyGroup is the IPv4 multicast group of the mckey rows (administratively
// scoped, only ever on the lab's bridge).
const mckeyGroup = "239.77.0.7"

// addDropinMcast adds the multicast rows: librdmacm's unmodified mckey on
// rnic (rdma_join_multicast through the drop-in librdmacm.so.1, IGMP from
// rnicd's TAP NIC) against mckey on rxe (the kernel's RoCE join): the
// server is the receiver, joined first; the client sends its 10 UD
// datagrams to the group (QPN 0xFFFFFF, Q_Key 0x01234567), and the
// receiver must get all 10.
func addDropinMcast(add func(*Pairing)) {
	recv := "mckey -m " + mckeyGroup + " -b {self}"
	send := "mckey -s -m " + mckeyGroup + " -b {self}"
	add(&Pairing{Name: "rxe drop-in mckey", Guest: "rxe", Dropin: true, CM: true,
		GuestServer: recv, GuestClient: send, RnicServer: recv, RnicClient: send,
		ReadyLog: "mckey: joined dgid"})
}

// addDropinCM adds the rdma_cm drop-in rows: Debian's unmodified rping and
// ib_write_bw -R through the drop-in librdmacm.so.1 on rnicd's TAP NIC
// against the same tool in the guest: rping over RoCEv2 (rxe, IB CM on
// QP1) and over iWARP (siw, MPA over the NIC's own TCP; siwcrc asks for
// MPA CRCs), ib_write_bw -R over iWARP. The guest's server listens on
// kernel TCP on siw (iw_cm), on nothing the kernel shows on rxe.
func addDropinCM(add func(*Pairing)) {
	rping := "rping -s -a {self} -v -C 10"
	for _, g := range []string{"rxe", "siw", "siwcrc"} {
		port, cmPort := rpingPort, 0
		if !Guests[g].IWARP {
			port, cmPort = 0, rpingPort
		}
		add(&Pairing{Name: g + " drop-in rping", Guest: g, Dropin: true, CM: true,
			GuestServer: rping, GuestClient: "rping -c -a {server} -v -C 10",
			RnicServer: rping, RnicClient: "rping -c -a {server} -v -C 10", ListenPort: port, CMPort: cmPort})
	}
	guest := "ib_write_bw -d siw0 -R -F -s 65536 -n 5"
	rnic := "ib_write_bw -d " + dropinDevice + " -R -F -s 65536 -n 5"
	add(&Pairing{Name: "siw drop-in ib_write_bw -R 65536", Guest: "siw", Dropin: true, CM: true,
		GuestServer: guest, GuestClient: guest + " {server}",
		RnicServer: rnic, RnicClient: rnic + " {server}", ListenPort: 18515})
}

// Rows expands pairings into rows, rnic as server first (a Tests
// pairing: the plain binary first).
func Rows(ps []*Pairing) []Row {
	rows := make([]Row, 0, 2*len(ps))
	for _, p := range ps {
		if p.Tests {
			rows = append(rows, Row{p, GuestTests}, Row{p, GuestTestsRace})
			continue
		}
		rows = append(rows, Row{p, RnicServer}, Row{p, RnicClient})
	}
	return rows
}

// smokeRows are the CI subset: pairings (every role) or single rows by
// label. The passthrough tests in both guests and one passthrough
// interop row add about a minute and a half to the smoke; the drop-in
// rc pingpong's two rows about 6 s, and building rnicd and the library
// about 10 s more; the drop-in rping rows (rdma_cm over RoCEv2 and
// iWARP) 3-6 s each.
var smokeRows = []string{"rxe rc pingpong 64", "siw rping", "rxe passthrough tests", "siw passthrough tests",
	"rxe passthrough pingpong 64 / rnic server", "rxe drop-in rc pingpong 64", "rxe drop-in rping", "siw drop-in rping"}

// Select returns the rows to run: with smoke the CI subset, then those
// whose Label matches only (all if only is empty).
func Select(rows []Row, only string, smoke bool) ([]Row, error) {
	var re *regexp.Regexp
	if only != "" {
		var err error
		if re, err = regexp.Compile(only); err != nil {
			return nil, fmt.Errorf("--only: %w", err)
		}
	}
	var out []Row
	for _, r := range rows {
		if smoke && !isSmoke(r) {
			continue
		}
		if re != nil && !re.MatchString(r.Label()) {
			continue
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no row selected (--only %q, --smoke %v)", only, smoke)
	}
	return out, nil
}

func isSmoke(r Row) bool {
	for _, n := range smokeRows {
		if n == r.Name || n == r.Label() {
			return true
		}
	}
	return false
}

// GuestsOf returns the guests rows need, in first-use order.
func GuestsOf(rows []Row) []*Guest {
	var out []*Guest
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Guest] {
			seen[r.Guest] = true
			out = append(out, Guests[r.Guest])
		}
	}
	return out
}
