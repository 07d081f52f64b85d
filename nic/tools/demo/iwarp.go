package demo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/rnic/rnic/iwarp"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport"
	"github.com/rnic/rnic/transport/clock"
	"github.com/rnic/rnic/transport/stream"
)

// IWARPConfig describes an iWARP demo run: two NICs whose iWARP engines
// talk over kernel TCP.
type IWARPConfig struct {
	// AddrA and AddrB are the NICs' addresses (addresses of this host).
	AddrA, AddrB netip.Addr
	// Port is the TCP port rnic1 listens on.
	Port uint16
	// Pcap, if set, records the connection as Ethernet/IP/TCP frames from
	// SYN to FIN (a tee on rnic0's stream sees both directions).
	Pcap *transport.PcapWriter
	// Out receives the narration.
	Out io.Writer
	// Timeout bounds each step (2s if zero).
	Timeout time.Duration

	// TAPA and TAPB, if set, run the demo in the TAP mode: rnic0 and
	// rnic1 each own a TAP device (on one bridge) and their iWARP
	// connection runs on each NIC's own TCP, from the NIC's address. Both
	// must be set; the addresses are picked as Config's. Pcap then records
	// the real frames on rnic0's TAP (ARP/ND and the TCP handshake
	// included) instead of a synthesized conversation.
	TAPA, TAPB *tapnic.Config
}

// iwSide is one iWARP NIC with its objects.
type iwSide struct {
	name   string
	addr   netip.Addr
	tap    io.Closer // the TAP-mode NIC, if any
	stack  *iwarp.Stack
	dev    *nic.Device
	pd     *nic.PD
	buf    []byte
	mr     *nic.MR
	fmr    *nic.MR // fast-register MR (rnic1), for SEND with invalidate
	scq    *nic.CQ
	rcq    *nic.CQ
	qp     *nic.QP
	shared *memory.Shared

	mu     sync.Mutex
	events []iwarp.ConnEvent
}

func (s *iwSide) close() {
	if s.stack != nil {
		s.stack.Close()
	}
	defer func() {
		if s.tap != nil {
			s.tap.Close()
		}
	}()
	if s.dev != nil {
		s.dev.Close()
		if s.mr != nil {
			s.dev.DeregMR(s.mr)
		}
		if s.fmr != nil {
			s.dev.DeregMR(s.fmr)
		}
	}
	if s.shared != nil {
		s.shared.Close()
	}
}

func (s *iwSide) sge(off, n int) []verbs.SGE {
	return []verbs.SGE{{Addr: s.mr.Addr() + uint64(off), Length: uint32(n), LKey: s.mr.LKey()}}
}

func (s *iwSide) va(off int) uint64 { return s.mr.Addr() + uint64(off) }

// takeEvents returns and forgets the connection events seen so far.
func (s *iwSide) takeEvents() []iwarp.ConnEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.events
	s.events = nil
	return e
}

type iwDemo struct {
	ctx      context.Context
	cfg      IWARPConfig
	out      io.Writer
	rec      *streamRecorder
	a, b     *iwSide
	passed   int
	failures []string
}

// RunIWARP performs the iWARP demo and returns nil only if every step
// behaved as the specs (RFC 5040, 5041, 5044, 6581, 7306) say. The NICs are
// closed on return. Cancelling ctx ends the demo after the step in
// progress.
func RunIWARP(ctx context.Context, cfg IWARPConfig) error {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	d := &iwDemo{ctx: ctx, cfg: cfg, out: cfg.Out, rec: &streamRecorder{}}
	var ta, tb *tapNIC
	if cfg.TAPA != nil || cfg.TAPB != nil {
		var err error
		if cfg.AddrA, cfg.AddrB, err = tapAddrs(cfg.TAPA, cfg.TAPB, cfg.AddrA, cfg.AddrB); err != nil {
			return err
		}
		d.cfg.AddrA, d.cfg.AddrB = cfg.AddrA, cfg.AddrB
		a, b := *cfg.TAPA, *cfg.TAPB
		a.Name, b.Name = "rnic0", "rnic1"
		if a.Pcap == nil {
			a.Pcap = cfg.Pcap
		}
		if ta, err = openTAP(a); err != nil {
			return fmt.Errorf("demo: rnic0 on TAP %s: %w", a.TAP, err)
		}
		if tb, err = openTAP(b); err != nil {
			ta.closer.Close()
			return fmt.Errorf("demo: rnic1 on TAP %s: %w", b.TAP, err)
		}
	}
	var err error
	d.a, err = d.open("rnic0", "rnic1", cfg.AddrA, cfg.Pcap, ta)
	defer d.a.close()
	if err != nil {
		if tb != nil {
			tb.closer.Close()
		}
		return err
	}
	d.b, err = d.open("rnic1", "rnic0", cfg.AddrB, nil, tb)
	defer d.b.close()
	if err != nil {
		return err
	}
	if err := d.connect(); err != nil {
		return err
	}
	steps := []struct {
		title, why string
		run        func() error
	}{
		{"SEND", "An untagged message: rnic1 posted a receive buffer beforehand, and the DDP header names queue 0 (QN=0), the message sequence number (MSN, counting Sends from 1) and the message offset (MO). TCP makes the stream reliable, so nothing is acknowledged: rnic0's SEND completes once the stream took all its FPDUs.", d.send},
		{"RDMA WRITE", "A tagged message: 10000 bytes cut into FPDUs that each fit one 1460-byte TCP segment. Every FPDU carries the STag and tagged offset (TO) where its bytes land, so rnic1 places each one directly, in any order; only the last has the L flag. rnic1's CPU sees no completion.", d.write},
		{"RDMA READ", "rnic0 sends a Read Request on queue 1 with the sink STag/TO (its own buffer) and the source STag/TO (rnic1's); rnic1 answers with tagged Read Responses addressed to rnic0's sink buffer. The READ completes when the last response arrived.", d.read},
		{"atomics (RFC 7306)", "CmpSwap and FetchAdd travel as Atomic Requests on queue 1 with an 8-byte word's STag/TO; rnic1 executes them and returns the value the word had before in an Atomic Response on queue 3.", d.atomics},
		{"SEND with invalidate", "rnic1 lends rnic0 a fast-register memory region; rnic0 WRITEs into it, then a Send with Invalidate names the region's STag: rnic1 invalidates the STag when the Send arrives, so rnic0 cannot use it again, and rnic1's receive completion reports which STag died.", d.sendInv},
		{"error: bad STag", "An RDMA READ whose source STag rnic1 never handed out: rnic1 finds no region before a byte moves, sends a Terminate naming the layer, error type and code with the offending DDP/RDMAP headers, and closes the stream; its QP moves to ERR. The Terminate completes rnic0's READ with REM_ACCESS_ERR, flushes the rest, and rnic0's QP moves to ERR too. (An RDMA WRITE with a bad STag would end the same way, but its completion, local by then, would not show it.)", d.badSTag},
	}
	fmt.Fprintf(d.out, "\n")
	for i, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(d.out, "== step %d: %s\n%s\n", i+1, s.title, wrap(s.why, 78))
		d.rec.take()
		var notes bytes.Buffer
		d.out = &notes
		err := s.run()
		d.out = cfg.Out
		for _, l := range d.rec.take() {
			fmt.Fprintf(d.out, "  wire: %s\n", l)
		}
		d.out.Write(notes.Bytes())
		if err != nil {
			d.failures = append(d.failures, fmt.Sprintf("step %d (%s): %v", i+1, s.title, err))
			fmt.Fprintf(d.out, "  FAILED: %v\n\n", err)
			continue
		}
		d.passed++
		fmt.Fprintf(d.out, "  ok\n\n")
	}
	fmt.Fprintf(d.out, "demo: %d steps, %d behaved as specified\n", len(steps), d.passed)
	if len(d.failures) > 0 {
		return fmt.Errorf("%w: %s", ErrFailed, strings.Join(d.failures, "; "))
	}
	return nil
}

// open opens an iWARP NIC on kernel TCP, or with tn on the TAP-mode NIC's
// own TCP (whose TAP captures the real frames: no synthesized ones then).
func (d *iwDemo) open(name, peer string, addr netip.Addr, pcap *transport.PcapWriter, tn *tapNIC) (*iwSide, error) {
	s := &iwSide{name: name, addr: addr}
	network := stream.Network(&stream.TCP{})
	if tn != nil {
		s.tap, network, pcap = tn.closer, tn.streams, nil
	}
	tee := func(c stream.Conn) stream.Conn {
		if pcap != nil {
			c = stream.TeeConnWith(c, pcap, stream.TeeConfig{Now: time.Now, Framer: iwarp.CaptureFramer})
		}
		return d.rec.wrap(name, peer, c)
	}
	var err error
	s.stack, err = iwarp.NewStack(iwarp.Config{Clock: clock.NewReal(), Network: network, Addr: addr, Tee: tee,
		OnConnEvent: func(e iwarp.ConnEvent) { s.mu.Lock(); s.events = append(s.events, e); s.mu.Unlock() }})
	if err != nil {
		return s, err
	}
	if s.dev, err = nic.Open(nic.Config{Name: name, GIDs: []netip.Addr{addr}, Provider: s.stack}); err != nil {
		return s, err
	}
	// Registered memory lives outside the Go heap, as in the RoCE demo.
	if s.shared, err = memory.NewShared(bufSize); err != nil {
		return s, err
	}
	s.buf = s.shared.Bytes()
	if s.pd, err = s.dev.AllocPD(); err != nil {
		return s, err
	}
	all := memory.LocalWrite | memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	if s.mr, err = s.dev.RegMRShared(s.pd, s.shared, 0, bufSize, all); err != nil {
		return s, err
	}
	if s.scq, err = s.dev.CreateCQ(16); err != nil {
		return s, err
	}
	if s.rcq, err = s.dev.CreateCQ(16); err != nil {
		return s, err
	}
	cp := verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}
	if s.qp, err = s.dev.CreateQP(s.pd, nic.QPInit{Type: verbs.QPTypeRC, SendCQ: s.scq, RecvCQ: s.rcq, Cap: cp}); err != nil {
		return s, err
	}
	if err := s.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		return s, err
	}
	fmt.Fprintf(d.out, "%s: address %v, RC QP %#06x (RESET -> INIT), memory region STag %#x at %#x\n",
		name, addr, s.qp.QPN(), s.mr.RKey(), s.mr.Addr())
	return s, nil
}

// connect runs the iWARP connection manager: rnic1 listens, rnic0 opens
// the TCP connection and sends the MPA Request, rnic1 accepts with the MPA
// Reply, and rnic0's RTR opens rnic1's side.
func (d *iwDemo) connect() error {
	a, b := d.a, d.b
	fmt.Fprintf(d.out, "\n== connection setup (MPA, RFC 5044 + RFC 6581)\n%s\n", wrap(
		"rnic1 listens on a TCP port; rnic0 connects to it and, once TCP is up, sends an MPA Request: the key \"MPA ID Req Frame\", "+
			"whether it wants CRCs (C) and markers (M), revision 2 and, in the private data, its IRD (RDMA Reads it serves at once) "+
			"and ORD (Reads it issues at once) with the Ready-to-Receive (RTR) messages it can send. rnic1 accepts with an MPA Reply "+
			"carrying its own IRD/ORD and the RTR it picked. From then on both ends speak in FPDUs (framed DDP segments with a CRC32c), "+
			"but rnic1 may send only after rnic0's RTR, a zero-length RDMA WRITE, shows that rnic0 is in full operation. "+
			"Each QP moves INIT -> RTS when its side is established.", 78))
	accepted := make(chan error, 1)
	l, err := b.stack.Listen(netip.AddrPortFrom(b.addr, d.cfg.Port), func(r *iwarp.ConnRequest) {
		fmt.Fprintf(d.out, "  rnic1: connection request from %v: MPA rev %d, IRD %d ORD %d, crc=%v, rtr requested=%v, private data %q\n",
			r.Remote, r.Rev, r.IRD, r.ORD, r.CRC, r.PeerToPeer, r.PrivateData)
		accepted <- r.Accept(b.qp.QPN(), []byte("rnic1 accepts"), 4, 4)
	})
	if err != nil {
		return err
	}
	defer l.Close()
	done := make(chan iwarp.ConnectResult, 1)
	if err := a.stack.Connect(a.qp.QPN(), l.Addr(), []byte("rnic0 connects"), 4, 4, func(r iwarp.ConnectResult) { done <- r }); err != nil {
		return err
	}
	timer := time.NewTimer(d.cfg.Timeout)
	defer timer.Stop()
	var res iwarp.ConnectResult
	for got := 0; got < 2; got++ {
		select {
		case err := <-accepted:
			if err != nil {
				return fmt.Errorf("accept: %w", err)
			}
		case res = <-done:
			if res.Err != nil {
				return fmt.Errorf("connect: %w", res.Err)
			}
		case <-timer.C:
			return errors.New("connection setup timed out")
		}
	}
	// rnic1 is established when the RTR arrives.
	deadline := time.Now().Add(d.cfg.Timeout)
	for !d.hasEvent(b, iwarp.EventEstablished) {
		if time.Now().After(deadline) {
			return errors.New("rnic1 never saw the RTR")
		}
		time.Sleep(100 * time.Microsecond)
	}
	for _, l := range d.rec.take() {
		fmt.Fprintf(d.out, "  wire: %s\n", l)
	}
	fmt.Fprintf(d.out, "  rnic0: connected %v -> %v: MPA rev %d, rnic1's IRD %d ORD %d, CRC %v, markers %v, RTR %s, private data %q\n",
		res.Local, res.Remote, res.Rev, res.IRD, res.ORD, res.CRC, res.Markers, res.RTR, res.PrivateData)
	fmt.Fprintf(d.out, "  QP states: rnic0 %v, rnic1 %v\n", a.qp.State(), b.qp.State())
	if a.qp.State() != verbs.QPSRTS || b.qp.State() != verbs.QPSRTS {
		return errors.New("both QPs should be in RTS")
	}
	return nil
}

// hasEvent reports whether s has seen a connection event of type t (the
// events stay).
func (d *iwDemo) hasEvent(s *iwSide, t iwarp.ConnEventType) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.events {
		if e.Type == t {
			return true
		}
	}
	return false
}

// expect checks one completion and narrates it.
func (d *iwDemo) expect(s *iwSide, cq *nic.CQ, want verbs.WC) (verbs.WC, error) {
	return expectCompletion(d.ctx, d.out, s.name, cq, want, d.cfg.Timeout)
}

func (d *iwDemo) post(s *iwSide, wr verbs.SendWR) error {
	wr.Flags |= verbs.SendSignaled
	return s.qp.PostSend(&wr)
}

func (d *iwDemo) send() error {
	a, b := d.a, d.b
	msg := []byte("Hello from rnic0: this is a SEND over iWARP, 60 bytes long..")
	copy(a.buf, msg)
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 100, SGL: b.sge(0x100, 256)}); err != nil {
		return err
	}
	if err := d.post(a, verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: a.sge(0, len(msg))}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 1, Opcode: verbs.WCSend}); err != nil {
		return err
	}
	if _, err := d.expect(b, b.rcq, verbs.WC{WRID: 100, Opcode: verbs.WCRecv, ByteLen: uint32(len(msg))}); err != nil {
		return err
	}
	if !bytes.Equal(b.buf[0x100:0x100+len(msg)], msg) {
		return errors.New("the received bytes differ")
	}
	fmt.Fprintf(d.out, "  rnic1 received: %q\n", b.buf[0x100:0x100+len(msg)])
	return nil
}

// landed waits until want is at got: an RDMA WRITE completes at the
// requester once the stream took it, before rnic1 placed it.
func (d *iwDemo) landed(got, want []byte) bool {
	deadline := time.Now().Add(d.cfg.Timeout)
	for !bytes.Equal(got, want) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Microsecond)
	}
	return true
}

func (d *iwDemo) write() error {
	a, b := d.a, d.b
	for i := 0; i < 10000; i++ {
		a.buf[0x1000+i] = byte(i * 7)
	}
	if err := d.post(a, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, SGL: a.sge(0x1000, 10000),
		RemoteAddr: b.va(0x4000), RKey: b.mr.RKey()}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 2, Opcode: verbs.WCRDMAWrite}); err != nil {
		return err
	}
	if !d.landed(b.buf[0x4000:0x4000+10000], a.buf[0x1000:0x1000+10000]) {
		return errors.New("the written bytes differ")
	}
	fmt.Fprintf(d.out, "  rnic1's memory at %#x now holds rnic0's 10000 bytes\n", b.va(0x4000))
	return nil
}

func (d *iwDemo) read() error {
	a, b := d.a, d.b
	for i := 0; i < 5000; i++ {
		b.buf[0x8000+i] = byte(255 - i)
	}
	if err := d.post(a, verbs.SendWR{ID: 3, Opcode: verbs.WRRDMARead, SGL: a.sge(0x6000, 5000),
		RemoteAddr: b.va(0x8000), RKey: b.mr.RKey()}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 3, Opcode: verbs.WCRDMARead, ByteLen: 5000}); err != nil {
		return err
	}
	if !bytes.Equal(a.buf[0x6000:0x6000+5000], b.buf[0x8000:0x8000+5000]) {
		return errors.New("the bytes read differ")
	}
	fmt.Fprintf(d.out, "  rnic0's buffer at %#x now holds rnic1's 5000 bytes\n", a.va(0x6000))
	return nil
}

func (d *iwDemo) atomics() error {
	a, b := d.a, d.b
	binary.NativeEndian.PutUint64(b.buf[0xF000:], 0)
	if err := d.post(a, verbs.SendWR{ID: 4, Opcode: verbs.WRAtomicCmpSwp, SGL: a.sge(0xE000, 8),
		RemoteAddr: b.va(0xF000), RKey: b.mr.RKey(), CompareAdd: 0, Swap: 42}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 4, Opcode: verbs.WCCompSwap}); err != nil {
		return err
	}
	if err := d.post(a, verbs.SendWR{ID: 5, Opcode: verbs.WRAtomicFetchAdd, SGL: a.sge(0xE008, 8),
		RemoteAddr: b.va(0xF000), RKey: b.mr.RKey(), CompareAdd: 8}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 5, Opcode: verbs.WCFetchAdd}); err != nil {
		return err
	}
	o1, o2 := binary.NativeEndian.Uint64(a.buf[0xE000:]), binary.NativeEndian.Uint64(a.buf[0xE008:])
	v := binary.NativeEndian.Uint64(b.buf[0xF000:])
	fmt.Fprintf(d.out, "  CmpSwap(compare 0, swap 42) returned %d; FetchAdd(+8) returned %d; the word is now %d\n", o1, o2, v)
	if o1 != 0 || o2 != 42 || v != 50 {
		return fmt.Errorf("returned %d and %d, word %d; want 0, 42, 50", o1, o2, v)
	}
	return nil
}

func (d *iwDemo) sendInv() error {
	a, b := d.a, d.b
	var err error
	if b.fmr, err = b.dev.AllocFastMR(b.pd); err != nil {
		return err
	}
	const off, n = 0xC000, 0x1000
	stag, err := b.dev.FastRegMR(b.fmr, b.buf[off:off+n], 0xC000_0000, memory.LocalWrite|memory.RemoteWrite)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  rnic1 fast-registered %d bytes as STag %#x at %#x and gave it to rnic0\n", n, stag, 0xC000_0000)
	copy(a.buf[0x2000:], "written through a borrowed STag")
	if err := d.post(a, verbs.SendWR{ID: 6, Opcode: verbs.WRRDMAWrite, SGL: a.sge(0x2000, 31), RemoteAddr: 0xC000_0000, RKey: stag}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 6, Opcode: verbs.WCRDMAWrite}); err != nil {
		return err
	}
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 101, SGL: b.sge(0x300, 64)}); err != nil {
		return err
	}
	copy(a.buf[0x2100:], "done, STag returned")
	if err := d.post(a, verbs.SendWR{ID: 7, Opcode: verbs.WRSendWithInv, SGL: a.sge(0x2100, 19), InvRKey: stag}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 7, Opcode: verbs.WCSend}); err != nil {
		return err
	}
	wc, err := d.expect(b, b.rcq, verbs.WC{WRID: 101, Opcode: verbs.WCRecv, ByteLen: 19})
	if err != nil {
		return err
	}
	if wc.Flags&verbs.WCFlagWithInv == 0 || wc.InvRKey != stag {
		return fmt.Errorf("receive completion: flags %v invalidated %#x, want STag %#x", wc.Flags, wc.InvRKey, stag)
	}
	if !bytes.Equal(b.buf[off:off+31], a.buf[0x2000:0x2000+31]) {
		return errors.New("the bytes written through the fast-register STag differ")
	}
	// The key is dead now: registering the region again gives a new one.
	again, err := b.dev.FastRegMR(b.fmr, b.buf[off:off+n], 0xC000_0000, memory.LocalWrite|memory.RemoteWrite)
	if err != nil {
		return fmt.Errorf("the region is not free after the invalidate: %w", err)
	}
	fmt.Fprintf(d.out, "  rnic1 received %q; STag %#x is invalid now (the region is free again: re-registered as %#x)\n",
		b.buf[0x300:0x300+19], stag, again)
	return nil
}

func (d *iwDemo) badSTag() error {
	a, b := d.a, d.b
	a.takeEvents()
	b.takeEvents()
	bad := b.mr.RKey() ^ 0xFF
	if err := d.post(a, verbs.SendWR{ID: 8, Opcode: verbs.WRRDMARead, SGL: a.sge(0x3000, 64), RemoteAddr: b.va(0), RKey: bad}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 8, Status: verbs.WCRemAccessErr}); err != nil {
		return err
	}
	deadline := time.Now().Add(d.cfg.Timeout)
	// Both ends' streams have ended (FIN both ways) once each saw its
	// connection end; closing the stacks earlier would reset them.
	for (a.qp.State() != verbs.QPSErr || b.qp.State() != verbs.QPSErr ||
		!d.hasEvent(a, iwarp.EventDisconnected) || !d.hasEvent(b, iwarp.EventDisconnected)) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
	var term *iwarp.TerminateError
	for _, e := range b.takeEvents() {
		if e.Type == iwarp.EventDisconnected {
			fmt.Fprintf(d.out, "  rnic1's connection ended: %v\n", e.Err)
			errors.As(e.Err, &term)
		}
	}
	fmt.Fprintf(d.out, "  QP states now: rnic0 %v, rnic1 %v\n", a.qp.State(), b.qp.State())
	if !d.hasEvent(a, iwarp.EventDisconnected) {
		return errors.New("rnic0's connection did not end")
	}
	if term == nil || !term.Sent {
		return errors.New("rnic1 should have sent a Terminate")
	}
	if got := b.stack.Counters().Get(iwarp.TermSent); got != 1 {
		return fmt.Errorf("rnic1 sent %d Terminates, want 1", got)
	}
	if a.qp.State() != verbs.QPSErr || b.qp.State() != verbs.QPSErr {
		return errors.New("both QPs should be in ERR")
	}
	return nil
}
