// The device: configuration, opening and closing, the transport provider,
// the memory table and the bookkeeping of every object (counts against the
// limits, the QPN space).

package nic

import (
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// Config describes a device to open.
type Config struct {
	// Name is the device name (ibv_get_device_name), "rnic0" if empty.
	Name string
	// Provider creates the transport engine of each QP. It may be nil and
	// set later with SetProvider, for providers that need the device (its
	// memory table, GIDs or MTU) to be built.
	Provider verbs.Provider
	// GIDs are the port's addresses in GID table order: an IPv4 address
	// becomes the IPv4-mapped GID ::ffff:a.b.c.d, an IPv6 address is used as
	// is. With none, the table holds the link-local GID derived from MAC.
	GIDs []netip.Addr
	// LinkLocal puts the link-local GID derived from MAC at index 0,
	// before GIDs, as Linux does on every RoCE port (see gid.go): for a
	// device whose port owns MAC on the wire.
	LinkLocal bool
	// MAC is the port's Ethernet address; the node GUID is its EUI-64.
	MAC [6]byte
	// Transport is what the Provider's QPs speak (verbs.TransportIB, RoCEv2, if
	// zero); Query reports it with its node type.
	Transport verbs.Transport
	// MTU is the Ethernet MTU (DefaultLinkMTU if 0). The port's active path
	// MTU is the largest IB MTU ≤ MTU − 80, as in rxe: 1500 gives 1024.
	MTU int
	// Limits override the default device limits.
	Limits Limits
	// EventQueueLen is the capacity of the Events channel
	// (verbs.DefaultEventQueueLen if 0).
	EventQueueLen int
	// PrivilegedQKey lets QPs use controlled Q_Keys (the high bit set),
	// which the IBTA reserves to privileged consumers; Linux requires
	// CAP_NET_RAW for them.
	PrivilegedQKey bool
	// Seed, if set, seeds every random choice the device makes (QPNs, key
	// bytes and key indices), so that a simulated run replays exactly from
	// its seed. Nil everywhere else: QPNs and keys are then unpredictable.
	Seed *[32]byte
}

// Device is an open RDMA device with one port. All its methods, and those of
// the objects it creates, are safe for concurrent use.
type Device struct {
	name      string
	mac       [6]byte
	linkMTU   int
	mtu       verbs.MTU // the port's active MTU
	gids      []netip.Addr
	linkLocal bool // gids[0] is the link-local GID (Config.LinkLocal)
	guid      uint64
	limits    Limits
	privQKey  bool
	transport verbs.Transport
	mem       *memory.Table
	events    *eventQueue
	addrHands sync.Map    // *verbs.AddressVector → *AH, for PostSend's AH checks
	portDown  atomic.Bool // the link under the port is down (SetPortActive)
	mcast     mcastTable

	mu        sync.Mutex
	provider  verbs.Provider
	closed    bool
	nextPD    memory.PD
	pds       int
	mws       int
	cqs       int
	srqs      int
	ahs       int
	qps       map[uint32]*QP
	qpnRand   *rand.Rand // nil: the unpredictable global source
	resRdAtom int        // sum of max_dest_rd_atomic over the QPs
}

// Open opens a device as cfg describes.
func Open(cfg Config) (*Device, error) {
	limits, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, err
	}
	linkMTU := cfg.MTU
	if linkMTU == 0 {
		linkMTU = DefaultLinkMTU
	}
	mtu := activeMTU(linkMTU)
	if mtu == 0 {
		return nil, errorf(verbs.ErrInvalid, "link MTU %d leaves no room for a 256-byte path MTU (needs ≥ %d)", linkMTU, 256+headerRoom)
	}
	addrs := cfg.GIDs
	if cfg.LinkLocal {
		addrs = WithLinkLocal(addrs, cfg.MAC)
	}
	gids, err := buildGIDTable(addrs, cfg.MAC)
	if err != nil {
		return nil, err
	}
	qpnRand, memSeed := seeded(cfg.Seed)
	mem, err := memory.NewTable(memory.Config{MaxRegions: limits.MaxMR, MaxWindows: limits.MaxMW, MaxRegionSize: limits.MaxMRSize, Seed: memSeed})
	if err != nil {
		return nil, errorf(verbs.ErrInvalid, "memory table: %v", err)
	}
	name := cfg.Name
	if name == "" {
		name = "rnic0"
	}
	return &Device{
		name:      name,
		mac:       cfg.MAC,
		linkMTU:   linkMTU,
		mtu:       mtu,
		gids:      gids,
		linkLocal: cfg.LinkLocal,
		guid:      eui64(cfg.MAC),
		limits:    limits,
		privQKey:  cfg.PrivilegedQKey,
		transport: cfg.Transport,
		mem:       mem,
		events:    newEventQueue(cfg.EventQueueLen),
		provider:  cfg.Provider,
		qps:       make(map[uint32]*QP),
		qpnRand:   qpnRand,
	}, nil
}

// seeded splits a device seed into the QPN source and the memory table's
// seed; a nil seed gives nil for both (unpredictable sources).
func seeded(seed *[32]byte) (*rand.Rand, *[32]byte) {
	if seed == nil {
		return nil, nil
	}
	src := rand.NewChaCha8(*seed)
	var mem [32]byte
	_, _ = src.Read(mem[:]) // ChaCha8.Read never fails
	return rand.New(src), &mem
}

// Name returns the device name.
func (d *Device) Name() string { return d.name }

// MAC returns the port's Ethernet address.
func (d *Device) MAC() [6]byte { return d.mac }

// Memory returns the device's memory table, which engines use to check keys
// and move data.
func (d *Device) Memory() *memory.Table { return d.mem }

// SetProvider attaches the transport engine provider. It can be set once,
// if Config.Provider was nil; QPs can be created from then on.
func (d *Device) SetProvider(p verbs.Provider) error {
	if p == nil {
		return errorf(verbs.ErrInvalid, "set provider: nil")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.provider != nil {
		return errorf(verbs.ErrBusy, "set provider: device %s already has one", d.name)
	}
	d.provider = p
	return nil
}

// Close closes the event channel and refuses new objects. Existing objects
// stay usable until destroyed; Close does not destroy them.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return errorf(verbs.ErrClosed, "close %s", d.name)
	}
	d.closed = true
	d.mu.Unlock()
	d.events.close()
	return nil
}

// QP returns the live QP numbered qpn, or nil.
func (d *Device) QP(qpn uint32) *QP {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.qps[qpn]
}

// reserve takes one object of a kind against its limit. Caller holds d.mu.
func (d *Device) reserve(count *int, limit int, what string) error {
	if d.closed {
		return errorf(verbs.ErrClosed, "create %s on %s", what, d.name)
	}
	if *count >= limit {
		return errorf(verbs.ErrNoMemory, "%d %ss, the device maximum", limit, what)
	}
	*count++
	return nil
}

// release returns one object of a kind.
func (d *Device) release(count *int) {
	d.mu.Lock()
	*count--
	d.mu.Unlock()
}

// allocQPN picks a free QPN at random from 2 .. 0xFFFFFE: QP0 and QP1 are
// the special QPs (SMI, GSI) and 0xFFFFFF is the multicast QPN. A random QPN, unlike a counter, makes a reused number unlikely
// to meet stale packets of its previous owner and a QPN hard to guess off
// path. max_qp is at most 1/16 of the space by default, so a draw nearly
// always succeeds at once. Caller holds d.mu.
func (d *Device) allocQPN() uint32 {
	for {
		var qpn uint32
		if d.qpnRand != nil {
			qpn = 2 + d.qpnRand.Uint32N(maxQPN-1)
		} else {
			qpn = 2 + rand.Uint32N(maxQPN-1)
		}
		if _, used := d.qps[qpn]; !used {
			return qpn
		}
	}
}
