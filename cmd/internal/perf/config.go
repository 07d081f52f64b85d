// Configuration: the test (operation, mode, sizes, depths) with perftest's
// defaults, the roles (both sides in one process, or a server and a
// client), and the NICs' addresses.

package perf

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/rnic/rnic/cmd/internal/loopback"
	"github.com/rnic/rnic/cmd/internal/progkit"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/verbs"
)

// Op is the operation measured.
type Op string

// Operations.
const (
	OpWrite  Op = "write"
	OpRead   Op = "read"
	OpSend   Op = "send"
	OpAtomic Op = "atomic"
)

// Mode is what is measured: bandwidth or latency.
type Mode string

// Modes.
const (
	ModeBW  Mode = "bw"
	ModeLat Mode = "lat"
)

// AtomicType is the atomic operation of OpAtomic, named as perftest's -A.
type AtomicType string

// Atomic types.
const (
	FetchAndAdd AtomicType = "FETCH_AND_ADD"
	CmpAndSwap  AtomicType = "CMP_AND_SWAP"
)

// Defaults, perftest's where perftest has one.
const (
	DefaultSizeBW   = 65536 // perftest's bw tests
	DefaultSizeLat  = 2     // perftest's lat tests (DEF_SIZE_LAT)
	DefaultItersBW  = 5000
	DefaultItersLat = 1000
	DefaultQPs      = 1
	// DefaultMTU is the port's active MTU, which perftest uses unless told:
	// the embedded NIC has a jumbo link, so 4096.
	DefaultMTU     = 4096
	DefaultTxDepth = 128 // perftest's tx_depth for bw tests
	DefaultRxDepth = 512 // perftest's rx_depth for send tests (UD: see udRxDepth)
	// DefaultCQMod is perftest's CQ moderation for messages up to 8 KiB;
	// above that perftest signals every WR unless given -Q, rnic perf
	// keeps this.
	DefaultCQMod = 100
	// MaxQPs is the most QP pairs a test has: every QP needs one entry
	// of the send CQ that all of a side's QPs share, which holds at most
	// maxCQE−1 (one is spare).
	MaxQPs = maxCQE - 1
	// InflightPackets is the packets the default Inflight keeps on the
	// wire over all QPs: about what the receiving socket's 4 MiB
	// SO_RCVBUF holds. 255 QPs at depth 128 (each QP sending its 128-PSN
	// window) lost a third of their packets to the socket and collapsed
	// into RETRY_EXC_ERR; 10,000 QPs at 32 WRs of 64 KiB in flight lost
	// none.
	InflightPackets = 512
	DefaultPort     = 18515
	DefaultRDMAPort = 4791
	// DefaultIWARPPort is the TCP port a two-process iWARP server's
	// connection manager listens on: the side channel's next.
	DefaultIWARPPort = 18516
	// atomicSize is the message size of an atomic: one 64-bit word.
	atomicSize = 8
	// maxOutReads is the READ/atomic depth of a QP (perftest uses the
	// device's max_qp_rd_atom; rnic's is 128).
	maxOutReads = 128
)

// Config describes a run.
type Config struct {
	Op         Op
	Mode       Mode
	AtomicType AtomicType // OpAtomic only (FetchAndAdd if empty)
	// Size is the message size in bytes (atomics are always 8).
	Size int
	// Iters is the number of operations per QP.
	Iters int
	// QPs is the number of QP pairs the work is spread over.
	QPs int
	// MTU is the path MTU in bytes.
	MTU int
	// TxDepth bounds the outstanding send WRs per QP in bw mode (and is
	// the send queue size).
	TxDepth int
	// RxDepth is the number of receives kept posted per QP for SEND.
	RxDepth int
	// CQMod signals every CQMod-th send WR (perftest's CQ moderation),
	// capped at TxDepth.
	CQMod int
	// Inflight bounds the send WRs outstanding over all QPs in bw mode
	// (0: the larger of TxDepth and the WRs of InflightPackets packets,
	// so that one QP keeps its TxDepth). RoCE assumes a lossless link
	// (PFC); on a kernel socket the engine's budget (Budget) keeps the
	// packets of all QPs together within what the receiving socket holds,
	// and this bound does the same in the program: the QPs take turns
	// (each still at most TxDepth) and every QP carries its share.
	Inflight int
	// Budget is the embedded-mode NIC's budget of unacknowledged bytes
	// over all its QPs (roce.Config.Budget): 0 sizes it from the socket's
	// receive buffer, negative turns it off.
	Budget int
	// NoRaw skips the raw UDP measurement.
	NoRaw bool
	// UD runs a SEND test over UD QPs (perftest's -c UD): messages of at
	// most the path MTU, to Q_Key 0x11111111.
	UD bool
	// MW makes each side hand out memory windows instead of its MR: once
	// its QPs are in RTS it binds a Type 2B window over each QP's memory
	// and sends the windows' rkeys in a second key exchange, so the
	// peer's WRITEs, READs and atomics go through the windows (mw.go).
	// Between rnic's peers only (either side may ask); RoCEv2 without
	// rdma_cm.
	MW bool
	// mwFault breaks the windows on purpose (tests of a bw run, where
	// only the client reaches into the server's: it must then fail with
	// a remote access error).
	mwFault mwFault
	// GIDIndex is the source GID index of the QPs (perftest's -x) when
	// HasGIDIndex; otherwise the index of the side's address.
	GIDIndex    int
	HasGIDIndex bool
	// IWARP runs the test over iWARP instead of RoCEv2: iWARP devices on
	// kernel TCP (in the TAP mode on the NICs' own TCP), each QP pair
	// connected through the iWARP connection manager (MPA Request and
	// Reply). It works in every role; the raw figure is kernel TCP's.
	IWARP bool
	// RDMACM connects the QPs with rdma_cm, as perftest's -R: the IB CM
	// over QP1 to the server's Port, whose first connection (a control
	// QP) carries perftest's side channel as SENDs (cm.go). It runs on
	// the device's ibv.ConnManager: a local NIC's own, rnicd's or
	// libibverbs' rdma_cm.
	RDMACM bool
	// IWARPPort is the TCP port a two-process iWARP server's connection
	// manager listens on (DefaultIWARPPort if zero, any free port if
	// negative). The server tells the client over the side channel, so
	// a client needs no setting.
	IWARPPort int

	// IBDev is the device (perftest's -d), a device string
	// (ibv.ParseSpec). A plain name (or empty) is a NIC of this process,
	// built from the fields below (the name is the NIC's in one role of
	// two; in one process the NICs are rnic0 and rnic1). NAME@SOCKET (a
	// NIC rnicd serves) and verbs:NAME (libibverbs) are opened with
	// ibv.Open: their backend owns the port, so TAP, ServerTAP, Link,
	// ServerLink, Pcap and Trace must be unset and RDMAPort is not used;
	// the NIC's address is one of the device's GIDs (Addr, if set, must be
	// one; a server told none listens on every address), the path MTU
	// must fit its port (zero takes the port's active MTU), and the side
	// channel goes through the device's ibv.Network if it has one (the
	// raw baseline is then skipped), else kernel TCP. In one process both
	// sides run on that one device. RDMA_CM and IWARP need a NIC of this
	// process.
	IBDev string

	// Server is the server to connect to: set, this process is the
	// client. Empty with Serve, it is the server; empty without Serve,
	// both sides run in this process.
	Server string
	Serve  bool
	// Port is the TCP port of the side channel.
	Port int
	// Addr is this side's NIC address (the client's in one process).
	// Zero applies the loopback convention: the server on 127.0.0.2, the
	// client of a loopback server on the other of 127.0.0.2/127.0.0.3,
	// a client of a remote server on the address the host routes from.
	Addr netip.Addr
	// ServerAddr is the server NIC's address in one process (127.0.0.2).
	ServerAddr netip.Addr
	// RDMAPort is the RoCEv2 UDP port.
	RDMAPort uint16

	// Out receives the report, Progress a progress line every second for
	// runs longer than a few seconds (both may be nil).
	Out, Progress io.Writer
	// JSON prints one JSON object instead of the table.
	JSON bool
	// Pcap records the frames of this side's NIC (the client's in one
	// process; its tee sees both directions).
	Pcap *embedded.PcapWriter
	// Trace receives both NICs' engine traces.
	Trace io.Writer

	// Link (and ServerLink in one process) carry the NICs' frames instead
	// of UDP sockets: tests use an in-process link. Run closes them with
	// the NICs.
	Link, ServerLink embedded.Link
	// Listener is the server's side channel instead of a TCP listener on
	// Addr:Port (tests, and one-process runs, use an ephemeral port).
	Listener net.Listener
	// DialRetry is how long a client retries a refused side-channel
	// connection (2s if zero, once if negative).
	DialRetry time.Duration

	// TAP, if set, runs this side in the TAP mode (nil: the embedded
	// mode): its NIC owns the TAP device TAP.TAP with TAP.Prefixes as its
	// addresses (GID index i+1 is Prefixes[i]; 0 is the link-local GID)
	// and the side channel goes
	// through the NIC's own IP and TCP stack, so the kernel needs no
	// address on the TAP's network. A server listens on every address of
	// its NIC; a client sends from its address of the server's family
	// (Addr, if set, must be one of the NIC's). Pcap and Trace go to the
	// TAP NIC (the pcap then holds every frame on the TAP, ARP, ND and TCP
	// included) unless TAP sets its own. The path MTU must fit the TAP's
	// Ethernet MTU (zero takes the largest that fits: 1024 for 1500).
	// The raw baseline is skipped (Result.RawSkipped). Link, ServerLink
	// and Listener must be nil.
	//
	// In one process (no Serve, no Server) TAP is the client's NIC and
	// ServerTAP the server's: both sides need their own TAP, which the
	// caller puts on one bridge. iWARP in the TAP mode, in one process
	// or two, runs its connections on the NICs' own TCP.
	TAP, ServerTAP *tapnic.Config
}

// ErrConfig is wrapped by configuration errors.
var ErrConfig = errors.New("perf: bad configuration")

// kit words the shared plumbing's errors as perf's.
var kit = progkit.Program{Name: "perf", ErrConfig: ErrConfig}

// role says which sides run in this process.
type role uint8

const (
	roleBoth role = iota
	roleServer
	roleClient
)

// resolved is a checked Config with defaults applied.
type resolved struct {
	Config
	role role
	spec ibv.Spec // the device IBDev names
	// dev is the device of another backend spec names, once Run opened
	// it; nil for NICs of this process.
	dev ibv.Device
	// devMTU is dev's port's active MTU in bytes.
	devMTU int
	mtu    verbs.MTU
	server netip.Addr // the server's NIC address (client and one process)
	// anyAddr: a TAP-mode server listens on every address of its NIC, a
	// server on a device of another backend told no address on every
	// address of its network.
	anyAddr bool
	// cmReady, if set, is closed when an rdma_cm server listens (one
	// process: the client connects after it).
	cmReady chan struct{}
	// cmListenPort is the port it listens on, set before cmReady closes.
	cmListenPort int
}

// ParseOp, ParseMode and ParseAtomicType accept the names perftest users
// type (case-insensitively).
func ParseOp(s string) (Op, error) {
	switch o := Op(strings.ToLower(s)); o {
	case OpWrite, OpRead, OpSend, OpAtomic:
		return o, nil
	}
	return "", fmt.Errorf("%w: op %q: write, read, send or atomic", ErrConfig, s)
}

// ParseTestName parses the name of one of perftest's tests, "write_bw"
// or "ib_read_lat", into its op and mode.
func ParseTestName(s string) (Op, Mode, bool) {
	o, m, ok := strings.Cut(strings.TrimPrefix(strings.ToLower(s), "ib_"), "_")
	if !ok {
		return "", "", false
	}
	op, err1 := ParseOp(o)
	mode, err2 := ParseMode(m)
	if err1 != nil || err2 != nil {
		return "", "", false
	}
	return op, mode, true
}

// ParseMode parses "bw" or "lat".
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(s)); m {
	case ModeBW, ModeLat:
		return m, nil
	}
	return "", fmt.Errorf("%w: mode %q: bw or lat", ErrConfig, s)
}

// ParseAtomicType parses CMP_AND_SWAP or FETCH_AND_ADD.
func ParseAtomicType(s string) (AtomicType, error) {
	switch a := AtomicType(strings.ToUpper(s)); a {
	case FetchAndAdd, CmpAndSwap:
		return a, nil
	}
	return "", fmt.Errorf("%w: atomic type %q: CMP_AND_SWAP or FETCH_AND_ADD", ErrConfig, s)
}

// resolve applies defaults and checks the test parameters; for a server
// they come from the client later (applyParams), so only its own settings
// are checked here.
func (cfg Config) resolve(ctx context.Context) (*resolved, error) {
	r := &resolved{Config: cfg}
	c := &r.Config
	switch {
	case c.Server != "":
		r.role = roleClient
	case c.Serve:
		r.role = roleServer
	default:
		r.role = roleBoth
	}
	if err := c.fillPorts(); err != nil {
		return nil, err
	}
	var err error
	if r.spec, err = ibv.ParseSpec(cmp.Or(c.IBDev, "rnic0")); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if r.spec.Backend != ibv.BackendLocal {
		// Addresses and test defaults wait for the device's GID table
		// and port (resolveDevice).
		return r, r.checkDevice()
	}
	if c.TAP != nil || c.ServerTAP != nil {
		if err := r.resolveTAP(ctx); err != nil {
			return nil, err
		}
	}
	if r.role != roleServer {
		if err := r.testDefaults(); err != nil {
			return nil, err
		}
	}
	if c.TAP != nil || c.ServerTAP != nil {
		return r, nil
	}
	if err := r.resolveAddrs(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// fillPorts gives the ports, the dial retry and the outputs their
// defaults and checks the ports.
func (c *Config) fillPorts() error {
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.RDMAPort == 0 {
		c.RDMAPort = DefaultRDMAPort
	}
	if c.DialRetry == 0 {
		c.DialRetry = 2 * time.Second
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("%w: port %d", ErrConfig, c.Port)
	}
	if c.IWARPPort > 65535 {
		return fmt.Errorf("%w: iWARP port %d", ErrConfig, c.IWARPPort)
	}
	return nil
}

// resolveAddrs picks the embedded mode's addresses: the loopback
// convention where none are given, the server's by name for a client.
func (r *resolved) resolveAddrs(ctx context.Context) error {
	c := &r.Config
	switch r.role {
	case roleServer:
		if !c.Addr.IsValid() {
			c.Addr = loopback.Server
		}
	case roleBoth:
		if !c.ServerAddr.IsValid() {
			c.ServerAddr = loopback.Server
		}
		r.server = c.ServerAddr.Unmap()
		if !c.Addr.IsValid() {
			c.Addr = loopback.Other(r.server)
		}
	case roleClient:
		a, err := kit.Lookup(ctx, c.Server, nil)
		if err != nil {
			return err
		}
		r.server = a
		if !c.Addr.IsValid() {
			if c.Addr, err = kit.ClientAddr(a, DefaultRDMAPort); err != nil {
				return err
			}
		}
	}
	c.Addr = c.Addr.Unmap()
	if r.role == roleBoth && c.Addr == r.server {
		return fmt.Errorf("%w: both NICs on %v: they need two addresses", ErrConfig, c.Addr)
	}
	return nil
}

// testDefaults fills and checks the test parameters.
func (r *resolved) testDefaults() error {
	c := &r.Config
	if err := c.testKind(); err != nil {
		return err
	}
	if err := r.fitTAPPathMTU(); err != nil {
		return err
	}
	c.fillNumbers()
	if err := c.checkNumbers(); err != nil {
		return err
	}
	if r.mtu = verbs.MTUFromBytes(c.MTU); r.mtu == 0 {
		return fmt.Errorf("%w: MTU %d, must be 256, 512, 1024, 2048 or 4096", ErrConfig, c.MTU)
	}
	if c.UD {
		switch {
		case c.Op != OpSend:
			return fmt.Errorf("%w: UD carries SENDs only, not %s", ErrConfig, c.Op)
		case c.IWARP:
			return fmt.Errorf("%w: iWARP has no UD", ErrConfig)
		case c.Size > c.MTU:
			return fmt.Errorf("%w: a UD message of %d bytes does not fit the path MTU %d", ErrConfig, c.Size, c.MTU)
		}
	}
	if err := c.checkMW(); err != nil {
		return err
	}
	if r.dev != nil {
		return c.checkLimits(limitsOf("device "+r.spec.String(), r.dev.Query()))
	}
	return c.checkLimits(localLimits())
}

// testKind fills and checks the operation, the mode and the atomic type
// (an atomic moves 8 bytes).
func (c *Config) testKind() error {
	if c.Op == "" {
		c.Op = OpWrite
	}
	if c.Mode == "" {
		c.Mode = ModeBW
	}
	if _, err := ParseOp(string(c.Op)); err != nil {
		return err
	}
	if _, err := ParseMode(string(c.Mode)); err != nil {
		return err
	}
	if c.Op == OpAtomic {
		if c.AtomicType == "" {
			c.AtomicType = FetchAndAdd
		}
		if _, err := ParseAtomicType(string(c.AtomicType)); err != nil {
			return err
		}
		if c.Size != 0 && c.Size != atomicSize {
			return fmt.Errorf("%w: atomics move %d bytes, not %d", ErrConfig, atomicSize, c.Size)
		}
		c.Size = atomicSize
	}
	return nil
}

// fitTAPPathMTU bounds the path MTU by the TAP's Ethernet MTU (or the
// device's port).
func (r *resolved) fitTAPPathMTU() error {
	c := &r.Config
	if fit := r.tapPathMTU(); fit != 0 {
		// The TAP's Ethernet MTU bounds the path MTU; without one asked
		// for, the largest that fits (as perftest takes the port's
		// active MTU).
		if c.MTU == 0 {
			c.MTU = fit
		}
		if c.MTU > fit {
			if r.dev != nil {
				return fmt.Errorf("%w: path MTU %d does not fit device %s's port (at most %d)", ErrConfig, c.MTU, r.spec, fit)
			}
			return fmt.Errorf("%w: path MTU %d does not fit the TAP's Ethernet MTU (at most %d)", ErrConfig, c.MTU, fit)
		}
	}
	return nil
}

// fillNumbers gives the sizes, counts and depths left zero the defaults of
// the test's mode.
func (c *Config) fillNumbers() {
	bw := c.Mode == ModeBW
	fill := func(v *int, bwDef, latDef int) {
		if *v == 0 {
			*v = latDef
			if bw {
				*v = bwDef
			}
		}
	}
	fill(&c.Size, DefaultSizeBW, DefaultSizeLat)
	fill(&c.Iters, DefaultItersBW, DefaultItersLat)
	fill(&c.QPs, DefaultQPs, DefaultQPs)
	fill(&c.MTU, DefaultMTU, DefaultMTU) // the embedded NIC's jumbo link allows 4096
	fill(&c.TxDepth, fitDepth(DefaultTxDepth, c.QPs), fitDepth(DefaultTxDepth, c.QPs))
	fill(&c.RxDepth, fitDepth(DefaultRxDepth, c.QPs), fitDepth(DefaultRxDepth, c.QPs))
	fill(&c.CQMod, DefaultCQMod, DefaultCQMod)
	c.CQMod = min(c.CQMod, c.TxDepth)
	if c.Inflight == 0 {
		c.Inflight = max(c.TxDepth, InflightPackets/max(c.packets(), 1))
	}
	if c.UD && c.RxDepth == DefaultRxDepth {
		c.RxDepth = udRxDepth(c.Iters, c.QPs)
	}
	if !bw {
		c.CQMod = 1 // a latency test waits for each operation
	}
}

// checkNumbers checks the sizes, counts and depths against perf's ranges.
func (c *Config) checkNumbers() error {
	switch {
	case c.Size < 1 || c.Size > 1<<30:
		return fmt.Errorf("%w: size %d, must be 1..2^30", ErrConfig, c.Size)
	case c.Iters < 1 || c.Iters > 1<<26:
		return fmt.Errorf("%w: iters %d, must be 1..2^26", ErrConfig, c.Iters)
	case c.QPs < 1 || c.QPs > MaxQPs:
		return fmt.Errorf("%w: qps %d, must be 1..%d", ErrConfig, c.QPs, MaxQPs)
	case c.TxDepth < 1 || c.TxDepth > 1<<14:
		return fmt.Errorf("%w: tx depth %d", ErrConfig, c.TxDepth)
	case c.RxDepth < 1 || c.RxDepth > 1<<14:
		return fmt.Errorf("%w: rx depth %d", ErrConfig, c.RxDepth)
	case c.CQMod < 1:
		return fmt.Errorf("%w: CQ moderation %d", ErrConfig, c.CQMod)
	case c.Inflight < 1:
		return fmt.Errorf("%w: inflight %d, must be at least 1", ErrConfig, c.Inflight)
	case int64(c.QPs)*2*int64(region(c.Size)) > 4<<30:
		return fmt.Errorf("%w: %d QPs × %d bytes need more than 4 GiB of buffers", ErrConfig, c.QPs, c.Size)
	}
	return nil
}

// tapPathMTU is the largest path MTU the TAPs of this process (or the
// device of another backend) allow, or 0 in the embedded mode.
func (r *resolved) tapPathMTU() int {
	fit := r.devMTU
	for _, t := range []*tapnic.Config{r.TAP, r.ServerTAP} {
		if t != nil {
			if m := tapnic.PathMTU(t.MTU); fit == 0 || m < fit {
				fit = m
			}
		}
	}
	return fit
}

// resolveTAP checks the TAP mode's settings and picks the NICs'
// addresses.
func (r *resolved) resolveTAP(ctx context.Context) error {
	c := &r.Config
	switch {
	case c.Link != nil || c.ServerLink != nil || c.Listener != nil:
		return fmt.Errorf("%w: the TAP mode has its own links and side channel (no Link, ServerLink, Listener)", ErrConfig)
	case r.role == roleBoth && (c.TAP == nil || c.ServerTAP == nil):
		return fmt.Errorf("%w: both sides in one process need two NICs: give the server's TAP too (--tap twice), "+
			"or run the server (--serve) and the client in two processes", ErrConfig)
	case r.role != roleBoth && c.ServerTAP != nil:
		return fmt.Errorf("%w: a second TAP is for both sides in one process, not with --serve or a server", ErrConfig)
	}
	var own, srvOwn []netip.Addr
	for _, t := range []*tapnic.Config{c.TAP, c.ServerTAP} {
		if t == nil {
			continue
		}
		addrs, err := kit.TAPAddrs(t)
		if err != nil {
			return err
		}
		if t == c.TAP {
			own = addrs
		} else {
			srvOwn = addrs
		}
	}
	switch r.role {
	case roleServer:
		r.anyAddr = !c.Addr.IsValid()
	case roleBoth:
		if c.ServerAddr.IsValid() {
			r.server = c.ServerAddr.Unmap()
			if !slices.Contains(srvOwn, r.server) {
				return fmt.Errorf("%w: server address %v is not one of TAP %s's %v", ErrConfig, r.server, c.ServerTAP.TAP, srvOwn)
			}
		} else {
			r.server = srvOwn[0]
			if c.Addr.IsValid() {
				// The server's address of the family the client asked for.
				if a, ok := progkit.AddrOfFamily(srvOwn, c.Addr); ok {
					r.server = a
				}
			}
		}
		c.ServerAddr = r.server
	case roleClient:
		a, err := kit.Lookup(ctx, c.Server, own)
		if err != nil {
			return err
		}
		r.server = a
	}
	a, err := kit.ChooseAddr(own, c.Addr, r.server, "TAP "+c.TAP.TAP)
	if err != nil {
		return err
	}
	c.Addr = a
	return nil
}

// nicName is the name of this side's NIC of this process: -d's in one role
// of two (the server of one process is told none), else def.
func (r *resolved) nicName(def string) string {
	if r.IBDev == "" || r.role == roleBoth {
		return def
	}
	return r.spec.Name
}

// checkDevice refuses, for a device of another backend, what only a NIC
// of this process has or does.
func (r *resolved) checkDevice() error {
	c := &r.Config
	var what string
	switch {
	case c.TAP != nil || c.ServerTAP != nil:
		what = "a TAP"
	case c.Link != nil || c.ServerLink != nil:
		what = "a link"
	case c.Pcap != nil:
		what = "a capture"
	case c.Trace != nil:
		what = "a trace"
	case c.IWARP:
		what = "iWARP (rnic's own iWARP stack)"
	default:
		return nil
	}
	return kit.NotLocal(r.spec, what)
}

// resolveDevice picks, for the device of another backend dev (r.dev),
// the path MTU (the port's active MTU bounds it), the NICs' addresses
// among the device's, and the test's defaults. -R needs the device's
// rdma_cm (ibv.ConnManager).
func (r *resolved) resolveDevice(ctx context.Context, dev ibv.Device) error {
	c := &r.Config
	r.dev = dev
	if _, ok := dev.(ibv.ConnManager); c.RDMACM && !ok {
		return fmt.Errorf("%w: -R needs rdma_cm, which device %s does not offer", ErrConfig, r.spec)
	}
	pa, err := dev.QueryPort(1)
	if err != nil {
		return fmt.Errorf("perf: query port 1 of %s: %w", r.spec, err)
	}
	r.devMTU = pa.ActiveMTU.Bytes()
	own := progkit.DeviceAddrs(dev)
	if len(own) == 0 {
		return fmt.Errorf("%w: device %s has no IP address in its GID table %v", ErrConfig, r.spec, dev.GIDs())
	}
	what := "device " + r.spec.String()
	switch r.role {
	case roleClient:
		if r.server, err = kit.Lookup(ctx, c.Server, own); err != nil {
			return err
		}
	case roleBoth:
		// Both sides on the one device: the server's address is the
		// client's.
		if c.ServerAddr.IsValid() && (!c.Addr.IsValid() || c.ServerAddr.Unmap() != c.Addr.Unmap()) {
			return fmt.Errorf("%w: both sides run on device %s: one address (--addr), not a server's of its own", ErrConfig, r.spec)
		}
	}
	r.anyAddr = r.role == roleServer && !c.Addr.IsValid()
	if c.Addr, err = kit.ChooseAddr(own, c.Addr, r.server, what); err != nil {
		return err
	}
	if r.role == roleBoth {
		r.server, c.ServerAddr = c.Addr, c.Addr
	}
	if r.role != roleServer {
		return r.testDefaults()
	}
	return nil
}

// rttFactor is what a latency sample is divided by: write and send
// latency tests bounce a message, so a sample is two one-way trips; a READ
// or an atomic is one request and its response (perftest's rtt_factor).
func (c *Config) rttFactor() float64 {
	if c.Op == OpWrite || c.Op == OpSend {
		return 2
	}
	return 1
}

// packets is the number of packets one message takes at the path MTU
// (atomics and zero-length messages take one).
func (c *Config) packets() int {
	if c.Op == OpAtomic {
		return 1
	}
	return (c.Size + c.MTU - 1) / c.MTU
}

// udMaxRx is perftest's UC_MAX_RX: the most receives a UD (or UC) test
// posts up front.
const udMaxRx = 16000

// udRxDepth is the receive depth of a UD SEND test left at the default:
// as perftest (force_dependecies), every receive of the run is posted
// before the client starts, up to udMaxRx per QP, because a datagram that
// finds no receive WQE is lost (UD has no RNR NAK) and a server that
// re-posts receives as it polls falls behind a client whenever the CPU is
// contended. The receive CQ of all QPs must stay within the device's
// MaxCQE (rxe's 2^15-1).
func udRxDepth(iters, qps int) int {
	return max(DefaultRxDepth, min(iters, udMaxRx, (maxCQE-1)/max(qps, 1)))
}

// maxCQE is the most entries a CQ of rnic's NIC (and rxe's) holds.
const maxCQE = 1<<15 - 1

// fitDepth is a depth left at the default def for a test of qps QPs: def,
// or less when qps × def would not fit one CQ (all of a side's QPs share
// its send CQ and its receive CQ), but at least 1. Many QPs at a smaller
// depth still keep qps × depth WRs outstanding, far more than one QP at
// the default; a depth given explicitly is kept and checked instead.
func fitDepth(def, qps int) int {
	return max(1, min(def, (maxCQE-1)/max(qps, 1)))
}
