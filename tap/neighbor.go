// The neighbour cache: IP address → MAC, with the Neighbor Unreachability
// Detection state machine of RFC 4861 §7.3.2, used for IPv4/ARP as well
// (as Linux does, net/core/neighbour.c).
//
//	           send, no entry
//	  (none) ───────────────► INCOMPLETE ── MaxProbes solicitations, no answer ──► (forgotten,
//	                            │  answer                                            queue dropped)
//	                            ▼
//	  ┌──────────────────► REACHABLE ── ReachableTime ──► STALE
//	  │ confirmation            ▲                           │ send
//	  │ (ARP reply,             │ confirmation              ▼
//	  │  solicited NA)          └──────────── PROBE ◄──── DELAY (DelayFirstProbe)
//	  │                                         │ MaxProbes unicast probes, no answer
//	  └─────────────────────────────────────────┴──► INCOMPLETE (multicast again)
//
// One mutex (Host.mu) guards the cache. Work that touches the wire
// (solicitations, flushing the queue) is collected under the lock as a
// neighborAction and done after it is released.

package tap

import (
	"net/netip"
	"time"

	"github.com/rnic/rnic/transport/clock"
)

// NeighborConfig tunes the neighbour cache. Zero fields take the defaults
// of RFC 4861 §10, and Linux's for QueueLen: unres_qlen is 101 since
// Linux 3.3 (derived from unres_qlen_bytes); its old default of 3 cut the
// head off any message of more than 3 packets sent to a neighbour not yet
// resolved, and the peer NAKed the rest (PSN sequence error).
type NeighborConfig struct {
	RetransTimer    time.Duration // between solicitations, 1 s (RETRANS_TIMER)
	MaxProbes       int           // 3 (MAX_MULTICAST_SOLICIT / MAX_UNICAST_SOLICIT)
	ReachableTime   time.Duration // 30 s (REACHABLE_TIME), then STALE
	DelayFirstProbe time.Duration // 5 s (DELAY_FIRST_PROBE_TIME)
	QueueLen        int           // frames held per unresolved neighbour, 101; older dropped, counted
}

func (c NeighborConfig) withDefaults() NeighborConfig {
	if c.RetransTimer <= 0 {
		c.RetransTimer = time.Second
	}
	if c.MaxProbes <= 0 {
		c.MaxProbes = 3
	}
	if c.ReachableTime <= 0 {
		c.ReachableTime = 30 * time.Second
	}
	if c.DelayFirstProbe <= 0 {
		c.DelayFirstProbe = 5 * time.Second
	}
	if c.QueueLen <= 0 {
		c.QueueLen = defaultQueueLen
	}
	return c
}

// defaultQueueLen is Linux's unres_qlen (Documentation/networking/
// ip-sysctl.rst): a 64 KiB message at path MTU 1024 is 64 frames.
const defaultQueueLen = 101

// nudState is a neighbour's state (RFC 4861 §7.3.2).
type nudState uint8

const (
	nudNone nudState = iota // just created, not yet in a state
	nudIncomplete
	nudReachable
	nudStale
	nudDelay
	nudProbe
)

var nudNames = [...]string{"NONE", "INCOMPLETE", "REACHABLE", "STALE", "DELAY", "PROBE"}

func (s nudState) String() string {
	if int(s) < len(nudNames) {
		return nudNames[s]
	}
	return "?"
}

// resolved reports whether the state has a usable MAC.
func (s nudState) resolved() bool { return s >= nudReachable }

// queuedFrame is a frame waiting for its neighbour's MAC, with the
// virtio_net_hdr it goes out with (a TCP super-segment keeps its own).
type queuedFrame struct {
	frame []byte
	vnet  VnetHdr
}

// neighbor is one cache entry.
type neighbor struct {
	ip     netip.Addr
	mac    [6]byte
	state  nudState
	probes int           // solicitations sent in this INCOMPLETE or PROBE period
	queue  []queuedFrame // whole frames waiting for the MAC (INCOMPLETE only)

	// The timer is created once and Reset after; due and armed tell a
	// callback that lost a race with a Reset or Stop (it was already
	// running) that it has nothing to do.
	timer clock.Timer
	due   time.Duration
	armed bool
}

// neighborAction is the wire work decided under the lock.
type neighborAction struct {
	solicit  bool // send a solicitation for ip
	ip       netip.Addr
	unicast  bool    // a unicast probe to mac, else multicast/broadcast
	mac      [6]byte // the probe's destination; the neighbour's MAC for the log
	failed   int     // frames dropped because resolution failed
	giveUp   bool
	logState nudState // if not nudNone: log the transition to it
}

// act does the wire work of a.
func (h *Host) act(a neighborAction) {
	if a.logState != nudNone {
		h.logf("tap: neighbour %v %s %s", a.ip, macString(a.mac), a.logState)
	}
	if a.giveUp {
		h.logf("tap: neighbour %v: no answer, resolution failed, %d queued frames dropped", a.ip, a.failed)
	}
	if a.solicit {
		h.solicit(a.ip, a.unicast, a.mac)
	}
}

// solicit sends an ARP request or an NS for ip: broadcast / to the
// solicited-node group when resolving, unicast to mac when probing.
func (h *Host) solicit(ip netip.Addr, unicast bool, mac [6]byte) {
	src := h.sourceFor(ip)
	if ip.Is4() {
		dst := broadcastMAC
		if unicast {
			dst = mac
		}
		h.sendARP(arpRequest, dst, src, [6]byte{}, ip)
		return
	}
	h.sendNS(src, ip, unicast, mac)
}

// newIncompleteLocked creates an INCOMPLETE entry for ip and returns the
// first solicitation to send.
func (h *Host) newIncompleteLocked(ip netip.Addr) neighborAction {
	n := &neighbor{ip: ip}
	h.neighbors[ip] = n
	return h.startResolveLocked(n)
}

// startResolveLocked moves n to INCOMPLETE and sends its first multicast
// solicitation.
func (h *Host) startResolveLocked(n *neighbor) neighborAction {
	n.mac = [6]byte{}
	h.setStateLocked(n, nudIncomplete)
	n.probes = 1
	h.armLocked(n, h.ncfg.RetransTimer)
	return neighborAction{solicit: true, ip: n.ip}
}

func (h *Host) setStateLocked(n *neighbor, s nudState) { n.state = s }

// armLocked (re)starts n's timer for d from now.
func (h *Host) armLocked(n *neighbor, d time.Duration) {
	n.due = h.clk.Now() + d
	n.armed = true
	if n.timer == nil {
		n.timer = h.clk.AfterFunc(d, func() { h.neighborTimer(n) })
		return
	}
	n.timer.Reset(d)
}

func (h *Host) disarmLocked(n *neighbor) {
	n.armed = false
	if n.timer != nil {
		n.timer.Stop()
	}
}

// neighborTimer runs when n's timer fires.
func (h *Host) neighborTimer(n *neighbor) {
	h.mu.Lock()
	if h.closed || h.neighbors[n.ip] != n || !n.armed || h.clk.Now() < n.due {
		h.mu.Unlock()
		return
	}
	n.armed = false
	var a neighborAction
	switch n.state {
	case nudIncomplete:
		if n.probes < h.ncfg.MaxProbes {
			n.probes++
			h.armLocked(n, h.ncfg.RetransTimer)
			a = neighborAction{solicit: true, ip: n.ip}
			break
		}
		// FAILED (RFC 4861 §7.3.3): drop the queue and forget the entry,
		// so that the next send starts over.
		a = neighborAction{ip: n.ip, giveUp: true, failed: len(n.queue)}
		h.cnt.resolveFailed.Add(1)
		h.cnt.resolveFailedFrames.Add(uint64(len(n.queue)))
		n.queue = nil
		delete(h.neighbors, n.ip)
	case nudReachable:
		h.setStateLocked(n, nudStale)
		a = neighborAction{ip: n.ip, mac: n.mac, logState: nudStale}
	case nudDelay:
		h.setStateLocked(n, nudProbe)
		n.probes = 1
		h.armLocked(n, h.ncfg.RetransTimer)
		a = neighborAction{solicit: true, ip: n.ip, unicast: true, mac: n.mac, logState: nudProbe}
	case nudProbe:
		if n.probes < h.ncfg.MaxProbes {
			n.probes++
			h.armLocked(n, h.ncfg.RetransTimer)
			a = neighborAction{solicit: true, ip: n.ip, unicast: true, mac: n.mac}
			break
		}
		// The unicast probes went unanswered: the neighbour may have
		// changed its MAC. Resolve again from scratch (Linux's
		// mcast_resolicit); frames sent meanwhile are queued.
		a = h.startResolveLocked(n)
		a.logState = nudIncomplete
	}
	h.mu.Unlock()
	h.act(a)
}

// neighborUpdate is what ARP and ND learn, RFC 4861 §7.2.5 (and the ARP
// merge rule of RFC 826, which is the same with override always set).
type neighborUpdate struct {
	create    bool // make an entry if there is none (the message was addressed to us)
	confirmed bool // reachability confirmation: ARP reply, solicited NA
	override  bool // the MAC may replace a different cached one
}

// learn applies what a message said about ip (at mac).
func (h *Host) learn(ip netip.Addr, mac [6]byte, u neighborUpdate) {
	if mac[0]&1 != 0 || mac == [6]byte{} {
		return // a group or zero address is never a neighbour's
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	n := h.neighbors[ip]
	if n == nil {
		if !u.create || !h.onLink(ip) || h.isOwn(ip) {
			h.mu.Unlock()
			return
		}
		n = &neighbor{ip: ip}
		h.neighbors[ip] = n
	}
	var a neighborAction
	switch {
	case n.state == nudNone || n.state == nudIncomplete:
		n.mac = mac
		if u.confirmed {
			h.setStateLocked(n, nudReachable)
			h.armLocked(n, h.ncfg.ReachableTime)
		} else {
			h.setStateLocked(n, nudStale)
			h.disarmLocked(n)
		}
		// The queued frames go out before the lock is released, so that a
		// frame sent meanwhile cannot overtake them (RoCE would see a PSN
		// gap and retransmit).
		for _, f := range n.queue {
			h.writeTo(f.frame, mac, f.vnet)
		}
		n.queue = nil
		n.probes = 0
		a = neighborAction{ip: ip, mac: mac, logState: n.state}
	case mac != n.mac && !u.override:
		// A different address without override: keep ours, but doubt it.
		if n.state == nudReachable {
			h.setStateLocked(n, nudStale)
			h.disarmLocked(n)
			a = neighborAction{ip: ip, mac: n.mac, logState: nudStale}
		}
	default:
		changed := mac != n.mac
		n.mac = mac
		if u.confirmed {
			if n.state != nudReachable || changed {
				a = neighborAction{ip: ip, mac: mac, logState: nudReachable}
			}
			h.setStateLocked(n, nudReachable)
			n.probes = 0
			h.armLocked(n, h.ncfg.ReachableTime)
		} else if changed {
			h.setStateLocked(n, nudStale)
			h.disarmLocked(n)
			a = neighborAction{ip: ip, mac: mac, logState: nudStale}
		}
	}
	h.mu.Unlock()
	h.act(a)
}

// confirmNoMAC handles a solicited NA without a TLLA: it confirms a
// resolved entry's cached MAC (RFC 4861 §7.2.5) and cannot complete an
// INCOMPLETE one.
func (h *Host) confirmNoMAC(ip netip.Addr, solicited bool) {
	h.mu.Lock()
	n := h.neighbors[ip]
	if h.closed || n == nil || !n.state.resolved() || !solicited {
		h.mu.Unlock()
		return
	}
	mac := n.mac
	h.mu.Unlock()
	h.learn(ip, mac, neighborUpdate{confirmed: true, override: true})
}

// neighborState reports ip's state and MAC (for tests and debugging).
func (h *Host) neighborState(ip netip.Addr) (nudState, [6]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.neighbors[ip]; n != nil {
		return n.state, n.mac
	}
	return nudNone, [6]byte{}
}
