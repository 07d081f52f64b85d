// The iWARP demo: two iWARP NICs (embedded.OpenIWARP, on kernel TCP or
// on TAP-mode NICs' own TCP), connected through their rdma_cm (MPA
// Request, Reply and RTR), and six steps checked against RFC 5040, 5041,
// 5044, 6581 and 7306.

package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/tapnic"
	"github.com/rnic/rnic/nic/verbs"
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
	Pcap *embedded.PcapWriter
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

// iwarpHello is the iWARP demo's SEND.
const iwarpHello = "Hello from rnic0: this is a SEND over iWARP, 60 bytes long.."

// RunIWARP performs the iWARP demo and returns nil only if every step
// behaved as the specs (RFC 5040, 5041, 5044, 6581, 7306) say. The NICs are
// closed on return. Cancelling ctx ends the demo after the step in
// progress.
func RunIWARP(ctx context.Context, cfg IWARPConfig) error {
	cfg.Out, cfg.Timeout = defaults(cfg.Out, cfg.Timeout)
	d := &demo{ctx: ctx, cfg: Config{Out: cfg.Out, Timeout: cfg.Timeout}, out: cfg.Out, srec: &streamRecorder{}}
	d.wire = d.srec
	if err := d.openIWARP(&cfg); err != nil {
		return err
	}
	defer d.a.close()
	defer d.b.close()
	if err := d.connectCM(cfg.Port); err != nil {
		return err
	}
	return d.runSteps(d.iwarpSteps())
}

// iwarpSteps are the iWARP demo's steps.
func (d *demo) iwarpSteps() []step {
	return []step{
		{"SEND", "An untagged message: rnic1 posted a receive buffer beforehand, and the DDP header names queue 0 (QN=0), the message sequence number (MSN, counting Sends from 1) and the message offset (MO). TCP makes the stream reliable, so nothing is acknowledged: rnic0's SEND completes once the stream took all its FPDUs.", func() error { return d.send(iwarpHello) }},
		{"RDMA WRITE", "A tagged message: 10000 bytes cut into FPDUs that each fit one 1460-byte TCP segment. Every FPDU carries the STag and tagged offset (TO) where its bytes land, so rnic1 places each one directly, in any order; only the last has the L flag. rnic1's CPU sees no completion.", func() error { return d.write(2) }},
		{"RDMA READ", "rnic0 sends a Read Request on queue 1 with the sink STag/TO (its own buffer) and the source STag/TO (rnic1's); rnic1 answers with tagged Read Responses addressed to rnic0's sink buffer. The READ completes when the last response arrived.", func() error { return d.read(3, true) }},
		{"atomics (RFC 7306)", "CmpSwap and FetchAdd travel as Atomic Requests on queue 1 with an 8-byte word's STag/TO; rnic1 executes them and returns the value the word had before in an Atomic Response on queue 3.", func() error { return d.atomics(4) }},
		{"SEND with invalidate", "rnic1 lends rnic0 a fast-register memory region; rnic0 WRITEs into it, then a Send with Invalidate names the region's STag: rnic1 invalidates the STag when the Send arrives, so rnic0 cannot use it again, and rnic1's receive completion reports which STag died.", d.sendInv},
		{"error: bad STag", "An RDMA READ whose source STag rnic1 never handed out: rnic1 finds no region before a byte moves, sends a Terminate naming the layer, error type and code with the offending DDP/RDMAP headers, and closes the stream; its QP moves to ERR. The Terminate completes rnic0's READ with REM_ACCESS_ERR, flushes the rest, and rnic0's QP moves to ERR too. (An RDMA WRITE with a bad STag would end the same way, but its completion, local by then, would not show it.)", d.badSTag},
	}
}

// openIWARP opens both NICs: on kernel TCP, or on the TAPs' own TCP.
func (d *demo) openIWARP(cfg *IWARPConfig) error {
	var ta, tb *tapNIC
	if cfg.TAPA != nil || cfg.TAPB != nil {
		var err error
		if ta, tb, err = openTAPPair(cfg); err != nil {
			return err
		}
	}
	var err error
	if d.a, err = d.openIWARPSide("rnic0", "rnic1", cfg.AddrA, cfg.Pcap, ta); err != nil {
		if tb != nil {
			tb.closer.Close()
		}
		return err
	}
	if d.b, err = d.openIWARPSide("rnic1", "rnic0", cfg.AddrB, nil, tb); err != nil {
		d.a.close()
		return err
	}
	return nil
}

// openTAPPair opens the two TAP-mode NICs of an iWARP run, after picking
// their addresses into cfg; the pcap goes to rnic0's TAP.
func openTAPPair(cfg *IWARPConfig) (*tapNIC, *tapNIC, error) {
	var err error
	if cfg.AddrA, cfg.AddrB, err = tapAddrs(cfg.TAPA, cfg.TAPB, cfg.AddrA, cfg.AddrB); err != nil {
		return nil, nil, err
	}
	a, b := *cfg.TAPA, *cfg.TAPB
	a.Name, b.Name = "rnic0", "rnic1"
	if a.Pcap == nil {
		a.Pcap = cfg.Pcap
	}
	ta, err := openTAP(a)
	if err != nil {
		return nil, nil, fmt.Errorf("demo: rnic0 on TAP %s: %w", a.TAP, err)
	}
	tb, err := openTAP(b)
	if err != nil {
		ta.closer.Close()
		return nil, nil, fmt.Errorf("demo: rnic1 on TAP %s: %w", b.TAP, err)
	}
	return ta, tb, nil
}

// openIWARPSide opens an iWARP NIC on kernel TCP, or with tn on the
// TAP-mode NIC's own TCP (whose TAP captures the real frames: no
// synthesized ones then), and its objects. The recorder sees what the NIC
// writes to peer.
func (d *demo) openIWARPSide(name, peer string, addr netip.Addr, pcap *embedded.PcapWriter, tn *tapNIC) (*side, error) {
	cfg := embedded.IWARPConfig{Name: name, Addr: addr, CRC: true, Pcap: pcap,
		Wrap: func(c embedded.StreamConn) embedded.StreamConn { return d.srec.wrap(name, peer, c) }}
	var tap io.Closer
	if tn != nil {
		cfg.Network, cfg.Pcap, tap = tn.streams, nil, tn.closer
	}
	n, err := embedded.OpenIWARP(cfg)
	if err != nil {
		if tap != nil {
			tap.Close()
		}
		return nil, err
	}
	closeAll := n.Close
	if tap != nil {
		closeAll = func() error { err := n.Close(); tap.Close(); return err }
	}
	dev := n.Verbs(nic.IBVOptions{Close: closeAll})
	return d.objects(name, dev, dev, addr, d.iwarpQP)
}

// iwarpQP creates a side's RC QP, moves it to INIT, as the connection
// manager wants it, and tells it.
func (d *demo) iwarpQP(s *side) error {
	var err error
	cp := verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}
	if s.qp, err = s.dev.CreateQP(s.pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: s.scq, RecvCQ: s.rcq, Cap: cp}); err != nil {
		return err
	}
	if err := s.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "%s: address %v, RC QP %#06x (RESET -> INIT), memory region STag %#x at %#x\n",
		s.name, s.addr, s.qp.QPN(), s.mr.RKey(), s.mr.Addr())
	return nil
}

// connParam asks for 4 RDMA Reads each way (IRD and ORD in the MPA
// frames).
var connParam = ibv.ConnParam{ResponderResources: 4, InitiatorDepth: 4}

// connectCM runs the iWARP connection manager: rnic1 listens, rnic0 opens
// the TCP connection and sends the MPA Request, rnic1 accepts with the MPA
// Reply, and rnic0's RTR opens rnic1's side.
func (d *demo) connectCM(port uint16) error {
	a, b := d.a, d.b
	fmt.Fprintf(d.out, "\n== connection setup (MPA, RFC 5044 + RFC 6581)\n%s\n", wrap(
		"rnic1 listens on a TCP port; rnic0 connects to it and, once TCP is up, sends an MPA Request: the key \"MPA ID Req Frame\", "+
			"whether it wants CRCs (C) and markers (M), revision 2 and, in the private data, its IRD (RDMA Reads it serves at once) "+
			"and ORD (Reads it issues at once) with the Ready-to-Receive (RTR) messages it can send. rnic1 accepts with an MPA Reply "+
			"carrying its own IRD/ORD and the RTR it picked. From then on both ends speak in FPDUs (framed DDP segments with a CRC32c), "+
			"but rnic1 may send only after rnic0's RTR, a zero-length RDMA WRITE, shows that rnic0 is in full operation. "+
			"Each QP moves INIT -> RTS when its side is established.", 78))
	// The MPA exchange and the RTR after it each have a step's time.
	ctx, cancel := context.WithTimeout(d.ctx, 2*d.cfg.Timeout)
	defer cancel()
	l, err := b.dev.(ibv.ConnManager).CMListen(port)
	if err != nil {
		return err
	}
	defer l.Close()
	var acceptErr error
	accepted := make(chan struct{})
	go func() { defer close(accepted); acceptErr = d.accept(ctx, l) }()
	p := connParam
	a.conn, err = a.dev.(ibv.ConnManager).CMConnect(ctx, a.qp, b.addr, l.Port(), []byte("rnic0 connects"), &p)
	if err != nil {
		cancel()
		<-accepted
		return setupError("connect", err)
	}
	// rnic1 is established when the RTR arrives.
	if <-accepted; acceptErr != nil {
		return setupError("accept", acceptErr)
	}
	d.tellWire()
	m, _ := embedded.MPA(a.conn)
	fmt.Fprintf(d.out, "  rnic0: connected %v -> %v: MPA rev %d, rnic1's IRD %d ORD %d, CRC %v, markers %v, RTR %s, private data %q\n",
		a.conn.LocalAddr(), a.conn.RemoteAddr(), m.Rev, m.IRD, m.ORD, m.CRC, m.Markers, m.RTR, a.conn.PrivateData())
	fmt.Fprintf(d.out, "  QP states: rnic0 %v, rnic1 %v\n", a.qp.State(), b.qp.State())
	if a.qp.State() != verbs.QPSRTS || b.qp.State() != verbs.QPSRTS {
		return errors.New("both QPs should be in RTS")
	}
	return nil
}

// accept takes rnic1's connection request, tells it and accepts it on
// rnic1's QP, returning once the connection is established (the RTR came).
func (d *demo) accept(ctx context.Context, l ibv.CMListener) error {
	req, err := l.Accept(ctx)
	if err != nil {
		return err
	}
	m, _ := embedded.MPA(req)
	fmt.Fprintf(d.out, "  rnic1: connection request from %v: MPA rev %d, IRD %d ORD %d, crc=%v, rtr requested=%v, private data %q\n",
		req.RemoteAddr(), m.Rev, m.IRD, m.ORD, m.CRC, m.PeerToPeer, req.PrivateData())
	p := connParam
	d.b.conn, err = req.Accept(ctx, d.b.qp, []byte("rnic1 accepts"), &p)
	return err
}

// setupError names the half of the connection setup that failed, and a
// setup that ran out of time as such.
func setupError(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("connection setup timed out")
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (d *demo) sendInv() error {
	a, b := d.a, d.b
	// Fast registration is the verbs model's (a local NIC's), as on
	// Linux it is a kernel consumer's.
	dev := nic.DeviceOf(b.dev)
	var err error
	if b.fmr, err = dev.AllocFastMR(nic.PDOf(b.pd)); err != nil {
		return err
	}
	const off, n = 0xC000, 0x1000
	stag, err := dev.FastRegMR(b.fmr, b.buf[off:off+n], 0xC000_0000, memory.LocalWrite|memory.RemoteWrite)
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
	again, err := dev.FastRegMR(b.fmr, b.buf[off:off+n], 0xC000_0000, memory.LocalWrite|memory.RemoteWrite)
	if err != nil {
		return fmt.Errorf("the region is not free after the invalidate: %w", err)
	}
	fmt.Fprintf(d.out, "  rnic1 received %q; STag %#x is invalid now (the region is free again: re-registered as %#x)\n",
		b.buf[0x300:0x300+19], stag, again)
	return nil
}

func (d *demo) badSTag() error {
	a, b := d.a, d.b
	bad := b.mr.RKey() ^ 0xFF
	if err := d.post(a, verbs.SendWR{ID: 8, Opcode: verbs.WRRDMARead, SGL: a.sge(0x3000, 64), RemoteAddr: b.va(0), RKey: bad}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 8, Status: verbs.WCRemAccessErr}); err != nil {
		return err
	}
	deadline := time.Now().Add(d.cfg.Timeout)
	// Both ends' streams have ended (FIN both ways) once each saw its
	// connection end; closing the NICs earlier would reset them.
	for (a.qp.State() != verbs.QPSErr || b.qp.State() != verbs.QPSErr || !ended(a.conn) || !ended(b.conn)) &&
		time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
	var term *embedded.TerminateError
	if ended(b.conn) {
		err := embedded.ConnErr(b.conn)
		fmt.Fprintf(d.out, "  rnic1's connection ended: %v\n", err)
		errors.As(err, &term)
	}
	fmt.Fprintf(d.out, "  QP states now: rnic0 %v, rnic1 %v\n", a.qp.State(), b.qp.State())
	return d.checkTerminated(term)
}

// checkTerminated checks the end of the bad-STag step: rnic1 sent one
// Terminate (term is its connection's end), both connections ended and
// both QPs are in ERR.
func (d *demo) checkTerminated(term *embedded.TerminateError) error {
	a, b := d.a, d.b
	if !ended(a.conn) {
		return errors.New("rnic0's connection did not end")
	}
	if term == nil || !term.Sent {
		return errors.New("rnic1 should have sent a Terminate")
	}
	if got := counter(b.dev, "term_sent"); got != 1 {
		return fmt.Errorf("rnic1 sent %d Terminates, want 1", got)
	}
	if a.qp.State() != verbs.QPSErr || b.qp.State() != verbs.QPSErr {
		return errors.New("both QPs should be in ERR")
	}
	return nil
}

// ended reports whether a connection is down.
func ended(c ibv.CMConn) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// counter is dev's port counter name (0 if it has none).
func counter(dev ibv.Device, name string) uint64 {
	if c, ok := dev.(ibv.Counters); ok {
		for _, v := range c.Counters() {
			if v.Name == name {
				return v.Value
			}
		}
	}
	return 0
}
