// The RoCEv2 demo: two NICs on links (or TAPs, or both sides on one
// device), RC QPs connected by hand as an out-of-band exchange would, and
// eight steps checked against IBTA Vol 1.

package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// Run performs the RoCEv2 demo and returns nil only if every step behaved
// as the spec says. The NICs and links (or TAPs) are closed on return.
// Cancelling ctx ends the demo after the step in progress.
func Run(ctx context.Context, cfg Config) error {
	cfg.Out, cfg.Timeout = defaults(cfg.Out, cfg.Timeout)
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	d := &demo{ctx: ctx, cfg: cfg, out: cfg.Out, rec: newRecorder(cfg.PortA, cfg.PortB)}
	d.wire = d.rec
	if err := d.openRoCE(); err != nil {
		return err
	}
	if cfg.Device != nil {
		defer cfg.Device.Close()
	}
	defer d.a.close()
	defer d.b.close()
	if err := d.connect(); err != nil {
		return err
	}
	return d.runSteps(d.roceSteps())
}

// openRoCE opens both sides: on Config.Device, on the TAPs, or on the
// links.
func (d *demo) openRoCE() error {
	cfg := &d.cfg
	switch {
	case cfg.Device != nil:
		return d.openOnDevice()
	case cfg.TAPA != nil || cfg.TAPB != nil:
		return d.openTAPs()
	}
	var err error
	if d.a, err = d.open("rnic0", cfg.LinkA, cfg.AddrA, cfg.MACA, cfg.PortA, cfg.PortB, cfg.Pcap); err != nil {
		return err
	}
	if d.b, err = d.open("rnic1", cfg.LinkB, cfg.AddrB, cfg.MACB, cfg.PortB, cfg.PortA, nil); err != nil {
		d.a.close()
		return err
	}
	return nil
}

// roceHello is the RoCEv2 demo's SEND.
const roceHello = "Hello from rnic0: this is a SEND over RoCEv2, 64 bytes long...."

// roceSteps are the RoCEv2 demo's steps.
func (d *demo) roceSteps() []step {
	return []step{
		{"SEND", "A SEND consumes a receive WQE that rnic1 posted beforehand. The last (here: only) packet asks for an ACK (ackreq); rnic1 answers with an Acknowledge whose MSN counts the messages it has completed.", func() error { return d.send(roceHello) }},
		{"SEND with immediate", "The 32-bit immediate travels in an ImmDt header and shows up in rnic1's receive completion.", d.sendImm},
		{"RDMA WRITE", "10000 bytes at path MTU 1024 become WRITE First, Middles and Last. Only the First carries the RETH (address, rkey, length); the PSNs count up; one ACK for the Last acknowledges all of them. rnic1's CPU sees no completion: the data just lands.", func() error { return d.write(3) }},
		{"RDMA WRITE with immediate", "Like a WRITE, but the immediate consumes a receive WQE at rnic1, so rnic1 gets a RECV_RDMA_WITH_IMM completion.", d.writeImm},
		{"RDMA READ", "The READ request carries no data but reserves one PSN per response packet. rnic1 answers with READ Response First/Middle/Last, which also acknowledge the request: no separate ACK.", func() error { return d.read(5, false) }},
		{"atomics", "CmpSwap and FetchAdd act on an 8-byte word in rnic1's memory and return the value it had before, in an ATOMIC Acknowledge.", func() error { return d.atomics(6) }},
		{"UD SEND", "Unreliable datagram: no connection, every SEND names its destination (address handle, QPN, Q_Key) in a DETH, and nothing is acknowledged. The receive buffer starts with a 40-byte GRH area holding the sender's IP header.", d.ud},
		{"error: bad rkey", "A WRITE with an rkey rnic1 never handed out: rnic1 checks the key before a byte moves, answers NAK (remote access error) and moves its QP to ERR; rnic0 completes the WR with REM_ACCESS_ERR and moves its QP to ERR too.", d.badRKey},
	}
}

func (d *demo) open(name string, link embedded.Link, addr netip.Addr, mac [6]byte, port, peerPort uint16, pcap *embedded.PcapWriter) (*side, error) {
	macs := map[netip.Addr][6]byte{d.cfg.AddrA: d.cfg.MACA, d.cfg.AddrB: d.cfg.MACB}
	n, err := embedded.NewNIC(embedded.Config{Name: name, Addr: addr, MAC: mac, MTU: d.cfg.MTU, Pcap: pcap,
		Link:        d.rec.wrap(name, mac, link),
		Resolve:     func(a netip.Addr) ([6]byte, bool) { m, ok := macs[a]; return m, ok },
		UDPPort:     port,
		PeerPort:    func(netip.Addr) uint16 { return peerPort },
		TraceEvents: d.traceEvents(name)})
	if err != nil {
		return nil, err
	}
	dev := n.Verbs(nic.IBVOptions{})
	return d.objects(name, dev, dev, addr, d.roceQPs)
}

// traceEvents is the NIC name's hook for Config.TraceEvents (nil: none).
func (d *demo) traceEvents(name string) func(embedded.TraceEvent) {
	te := d.cfg.TraceEvents
	if te == nil {
		return nil
	}
	return func(e embedded.TraceEvent) { te(name, e) }
}

// openOnDevice puts both sides on Config.Device, at its address AddrA or
// its first.
func (d *demo) openOnDevice() error {
	dev := d.cfg.Device
	addr, err := deviceAddr(dev, d.cfg.AddrA)
	if err != nil {
		dev.Close()
		return err
	}
	fmt.Fprintf(d.out, "both sides on device %s: %s/A and %s/B are two sets of objects whose QPs talk through its port;\n"+
		"its frames are its own, so no \"wire:\" lines follow (capture them at its port)\n", dev.Name(), dev.Name(), dev.Name())
	if d.a, err = d.objects(dev.Name()+"/A", dev, nil, addr, d.roceQPs); err != nil {
		dev.Close()
		return err
	}
	if d.b, err = d.objects(dev.Name()+"/B", dev, nil, addr, d.roceQPs); err != nil {
		d.a.close()
		dev.Close()
		return err
	}
	return nil
}

// deviceAddr is want if dev has a GID of it, or with want zero the first
// address in dev's GID table.
func deviceAddr(dev ibv.Device, want netip.Addr) (netip.Addr, error) {
	for _, g := range dev.GIDs() {
		a := g.Unmap()
		if want.IsValid() && a == want.Unmap() || !want.IsValid() && a.IsValid() && !a.IsUnspecified() && !a.IsLinkLocalUnicast() {
			return a, nil
		}
	}
	if want.IsValid() {
		return want, fmt.Errorf("%w: %v is not in device %s's GID table %v", ErrConfig, want, dev.Name(), dev.GIDs())
	}
	return want, fmt.Errorf("%w: device %s has no IP address in its GID table %v", ErrConfig, dev.Name(), dev.GIDs())
}

// roceQPs creates a side's RC and UD QPs, draws its starting PSN and
// tells them.
func (d *demo) roceQPs(s *side) error {
	var err error
	cp := verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 64}
	if s.qp, err = s.dev.CreateQP(s.pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: s.scq, RecvCQ: s.rcq, Cap: cp}); err != nil {
		return err
	}
	if s.ud, err = s.dev.CreateQP(s.pd, ibv.QPInit{Type: verbs.QPTypeUD, SendCQ: s.scq, RecvCQ: s.rcq, Cap: cp}); err != nil {
		return err
	}
	s.psn = rand.Uint32() & 0xFFFFFF
	fmt.Fprintf(d.out, "%s: address %v (RoCEv2 GID %v), RC QP %#06x, UD QP %#06x, memory region rkey %#x at %#x\n",
		s.name, s.addr, verbs.GIDFromAddr(s.addr), s.qp.QPN(), s.ud.QPN(), s.mr.RKey(), s.mr.Addr())
	return nil
}

// connect takes both RC QPs through RESET → INIT → RTR → RTS with each
// other's QPN and starting PSN, as an out-of-band exchange would.
func (d *demo) connect() error {
	all := memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
	for _, p := range [][2]*side{{d.a, d.b}, {d.b, d.a}} {
		me, peer := p[0], p[1]
		if err := me.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: all},
			verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
			return err
		}
		rtr := verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: peer.qp.QPN(), RQPSN: peer.psn,
			MaxDestRdAtomic: 1, MinRNRTimer: 12,
			AV: verbs.AddressVector{DGID: verbs.GIDFromAddr(peer.addr), HopLimit: 64, PortNum: 1, SGIDIndex: uint8(me.sgid)}}
		if err := me.qp.Modify(&rtr, verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|
			verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer); err != nil {
			return err
		}
		rts := verbs.QPAttr{State: verbs.QPSRTS, SQPSN: me.psn, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1}
		if err := me.qp.Modify(&rts, verbs.AttrState|verbs.AttrSQPSN|verbs.AttrTimeout|verbs.AttrRetryCnt|
			verbs.AttrRNRRetry|verbs.AttrMaxQPRdAtomic); err != nil {
			return err
		}
		// UD: no peer, just a Q_Key.
		if err := me.ud.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, QKey: udQKey},
			verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrQKey); err != nil {
			return err
		}
		if err := me.ud.Modify(&verbs.QPAttr{State: verbs.QPSRTR}, verbs.AttrState); err != nil {
			return err
		}
		if err := me.ud.Modify(&verbs.QPAttr{State: verbs.QPSRTS, SQPSN: me.psn}, verbs.AttrState|verbs.AttrSQPSN); err != nil {
			return err
		}
	}
	fmt.Fprintf(d.out, "connected: %s QP %#06x sends from PSN %d, %s QP %#06x from PSN %d; both RESET -> INIT -> RTR -> RTS\n",
		d.a.name, d.a.qp.QPN(), d.a.psn, d.b.name, d.b.qp.QPN(), d.b.psn)
	return nil
}

const udQKey = 0x11111111

func (d *demo) sendImm() error {
	a, b := d.a, d.b
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 101, SGL: b.sge(0x200, 256)}); err != nil {
		return err
	}
	if err := d.post(a, verbs.SendWR{ID: 2, Opcode: verbs.WRSendWithImm, Imm: 0x1234, SGL: a.sge(0, 32)}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 2, Opcode: verbs.WCSend}); err != nil {
		return err
	}
	wc, err := d.expect(b, b.rcq, verbs.WC{WRID: 101, Opcode: verbs.WCRecv, ByteLen: 32})
	if err != nil {
		return err
	}
	if wc.Flags&verbs.WCFlagWithImm == 0 || wc.Imm != 0x1234 {
		return fmt.Errorf("immediate %#x (flags %v), want 0x1234", wc.Imm, wc.Flags)
	}
	return nil
}

func (d *demo) writeImm() error {
	a, b := d.a, d.b
	if err := b.qp.PostRecv(&verbs.RecvWR{ID: 102, SGL: b.sge(0x300, 16)}); err != nil {
		return err
	}
	if err := d.post(a, verbs.SendWR{ID: 4, Opcode: verbs.WRRDMAWriteWithImm, Imm: 0xC0FFEE, SGL: a.sge(0x1000, 100),
		RemoteAddr: b.va(0x7000), RKey: b.mr.RKey()}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 4, Opcode: verbs.WCRDMAWrite}); err != nil {
		return err
	}
	wc, err := d.expect(b, b.rcq, verbs.WC{WRID: 102, Opcode: verbs.WCRecvRDMAWithImm, ByteLen: 100})
	if err != nil {
		return err
	}
	if wc.Imm != 0xC0FFEE || !bytes.Equal(b.buf[0x7000:0x7000+100], a.buf[0x1000:0x1000+100]) {
		return errors.New("immediate or data differ")
	}
	return nil
}

func (d *demo) ud() error {
	a, b := d.a, d.b
	msg := []byte("a datagram for UD QP")
	copy(a.buf[0x9000:], msg)
	if err := b.ud.PostRecv(&verbs.RecvWR{ID: 103, SGL: b.sge(0xA000, 40+256)}); err != nil {
		return err
	}
	ah, err := a.dev.CreateAH(a.pd, verbs.AddressVector{DGID: verbs.GIDFromAddr(b.addr), HopLimit: 64, PortNum: 1, SGIDIndex: uint8(a.sgid)})
	if err != nil {
		return err
	}
	defer ah.Destroy()
	wr := verbs.SendWR{ID: 8, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: a.sge(0x9000, len(msg)),
		AH: ah.AV(), RemoteQPN: b.ud.QPN(), RemoteQKey: udQKey}
	if err := a.ud.PostSend(&wr); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 8, Opcode: verbs.WCSend}); err != nil {
		return err
	}
	wc, err := d.expect(b, b.rcq, verbs.WC{WRID: 103, Opcode: verbs.WCRecv, ByteLen: uint32(40 + len(msg))})
	if err != nil {
		return err
	}
	if wc.SrcQP != a.ud.QPN() || !bytes.Equal(b.buf[0xA000+40:0xA000+40+len(msg)], msg) {
		return errors.New("source QP or data differ")
	}
	fmt.Fprintf(d.out, "  the first 40 bytes of the buffer hold the GRH area (20 zero bytes, then %s's IPv4 header); the message follows: %q\n",
		a.name, b.buf[0xA000+40:0xA000+40+len(msg)])
	return nil
}

func (d *demo) badRKey() error {
	a, b := d.a, d.b
	bad := b.mr.RKey() ^ 0xFF
	if err := d.post(a, verbs.SendWR{ID: 9, Opcode: verbs.WRRDMAWrite, SGL: a.sge(0, 64), RemoteAddr: b.va(0), RKey: bad}); err != nil {
		return err
	}
	if _, err := d.expect(a, a.scq, verbs.WC{WRID: 9, Status: verbs.WCRemAccessErr}); err != nil {
		return err
	}
	deadline := time.Now().Add(d.cfg.Timeout)
	for b.qp.State() != verbs.QPSErr && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
	fmt.Fprintf(d.out, "  QP states now: %s %v, %s %v\n", a.name, a.qp.State(), b.name, b.qp.State())
	if a.qp.State() != verbs.QPSErr || b.qp.State() != verbs.QPSErr {
		return errors.New("both QPs should be in ERR")
	}
	return nil
}
